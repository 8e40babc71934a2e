//! The fast path of JSON lines for the usual line: one flat object whose wanted keys hold
//! strings without escapes, numbers, booleans or null. It reads and checks the whole line
//! against the JSON grammar for what it accepts, and gives up (`None`: the general reader then
//! answers, its error messages included) at anything else: a nested value, a `\u` escape, an
//! escape in a wanted string, a wanted key with wanted keys under it, anything malformed. So
//! what it returns is what the general reader returns for the same line.

use crate::tuple::Value;

/// What a key of the line is to the caller.
pub enum Wanted<'a> {
    /// Skip its value.
    No,
    /// Its value goes to these slots.
    Into(&'a [usize]),
    /// Wanted keys are under it: only the general reader handles that.
    Deeper,
}

/// The wanted values of `line` into `out` (a later key of the same name replaces an earlier
/// one), or `None` when the general reader must read the line.
pub fn extract<'k>(
    line: &str,
    wanted: impl Fn(&str) -> Wanted<'k>,
    out: &mut [Value],
) -> Option<()> {
    let mut s = Scan {
        b: line.as_bytes(),
        i: 0,
    };
    s.ws();
    s.eat(b'{')?;
    s.ws();
    if s.eat(b'}').is_none() {
        loop {
            s.eat(b'"')?;
            let (key, escaped) = s.string()?;
            if escaped {
                return None;
            }
            let key = line.get(key.0..key.1)?;
            s.ws();
            s.eat(b':')?;
            s.ws();
            match wanted(key) {
                Wanted::No => s.skip()?,
                Wanted::Into(slots) => {
                    let v = s.value(line)?;
                    if let Some((&last, rest)) = slots.split_last() {
                        for &at in rest {
                            *out.get_mut(at)? = v.clone();
                        }
                        *out.get_mut(last)? = v;
                    }
                }
                Wanted::Deeper => return None,
            }
            s.ws();
            match s.next()? {
                b',' => s.ws(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    s.ws();
    (s.i == s.b.len()).then_some(())
}

/// How many bytes of `b` come before the first quote, backslash or control character (`None`
/// when there is none): eight bytes at a time, the first such byte of a word found from its
/// bit mask.
#[inline]
fn plain_run(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    // The high bit of each zero byte of `x`; above the lowest zero byte, others may be flagged
    // wrongly (a borrow), but the lowest flag is always a zero byte.
    let zeros = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut at = 0;
    while let Some(chunk) = b.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // A byte below 0x20 is one whose top three bits are zero.
        let special = zeros(x ^ (ONES * u64::from(b'"')))
            | zeros(x ^ (ONES * u64::from(b'\\')))
            | zeros(x & (ONES * 0xe0));
        if special != 0 {
            return Some(at + special.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    b[at..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| at + p)
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    #[inline]
    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    #[inline]
    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    /// A string after its opening quote: the byte range of its contents and whether it holds
    /// (valid, undecoded) escapes. Control characters are errors, `\u` is left to the general
    /// reader.
    #[inline]
    fn string(&mut self) -> Option<((usize, usize), bool)> {
        let start = self.i;
        let mut escaped = false;
        loop {
            self.i += plain_run(self.b.get(self.i..)?)?;
            if self.b[self.i] < 0x20 {
                return None;
            }
            if self.b[self.i] == b'"' {
                self.i += 1;
                return Some(((start, self.i - 1), escaped));
            }
            match self.b.get(self.i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                _ => return None,
            }
            escaped = true;
        }
    }

    /// Digits, at least one.
    #[inline]
    fn digits(&mut self) -> Option<()> {
        let start = self.i;
        while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        (self.i > start).then_some(())
    }

    /// A number: its text and whether it has a fraction or an exponent.
    #[inline]
    fn number(&mut self) -> Option<(usize, usize, bool)> {
        let start = self.i;
        let _ = self.eat(b'-');
        match self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits()?,
            _ => return None,
        }
        let mut float = false;
        if self.eat(b'.').is_some() {
            self.digits()?;
            float = true;
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.digits()?;
            float = true;
        }
        Some((start, self.i, float))
    }

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// Skip a scalar value, checking it.
    #[inline]
    fn skip(&mut self) -> Option<()> {
        match self.b.get(self.i)? {
            b'"' => {
                self.i += 1;
                self.string().map(|_| ())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => {
                let (s, e, float) = self.number()?;
                // A number beyond a float's range (`1e400`, or hundreds of digits) is an error
                // to the general reader: such a line is left to it.
                let text = self.b.get(s..e)?;
                let exponent = float && text.iter().any(|b| matches!(b, b'e' | b'E'));
                if exponent || text.len() > 18 {
                    let text = std::str::from_utf8(text).ok()?;
                    text.parse::<f64>().ok().filter(|f| f.is_finite())?;
                }
                Some(())
            }
        }
    }

    /// Read a scalar value as the general reader builds it.
    #[inline]
    fn value(&mut self, line: &str) -> Option<Value> {
        match self.b.get(self.i)? {
            b'"' => {
                self.i += 1;
                match self.string()? {
                    ((s, e), false) => Some(Value::str(line.get(s..e)?)),
                    (_, true) => None,
                }
            }
            b't' => self.literal(b"true").map(|()| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Value::Bool(false)),
            b'n' => self.literal(b"null").map(|()| Value::Null),
            _ => {
                let (s, e, float) = self.number()?;
                let text = line.get(s..e)?;
                match float {
                    // An integer beyond i64 is the general reader's (it makes it a float), and
                    // so is `-0`, whose sign only it knows what to do with.
                    false if text == "-0" => None,
                    false => text.parse::<i64>().ok().map(Value::Int),
                    // The nearest double, as the general reader (serde_json with
                    // `float_roundtrip`) gives it; beyond a double's range it is an error there.
                    true => text
                        .parse::<f64>()
                        .ok()
                        .filter(|f| f.is_finite())
                        .map(Value::Float),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Floats are the nearest double to their text (Python's `float`, serde_json's
    /// `float_roundtrip`): a JSON pass-through keeps every digit.
    #[test]
    fn floats_are_read_to_the_nearest_double() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut texts: Vec<String> = [
            "-943305.0469559873",
            "1.5e-300",
            "0.1",
            "2.2250738585072014e-308",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..20_000 {
            let f = f64::from_bits(rng.random::<u64>() >> 2);
            if f.is_finite() {
                texts.push(format!("{f:?}"));
            }
        }
        for text in &texts {
            let line = format!("{{\"a\":{text}}}");
            let got = take(&line).expect("the fast path reads it");
            let want = text.parse::<f64>().expect("a float");
            let serde: serde_json::Value =
                serde_json::from_str(&line).expect("serde_json reads it");
            assert_eq!(got[0], Value::Float(want), "{text}");
            assert_eq!(
                serde["a"].as_f64().map(f64::to_bits),
                Some(want.to_bits()),
                "{text}"
            );
        }
    }

    fn take(line: &str) -> Option<Vec<Value>> {
        let mut out = vec![Value::Null; 2];
        let wanted = |k: &str| match k {
            "a" => Wanted::Into(&[0]),
            "b" => Wanted::Into(&[1]),
            "deep" => Wanted::Deeper,
            _ => Wanted::No,
        };
        extract(line, wanted, &mut out).map(|()| out)
    }

    proptest::proptest! {
        /// The word-at-a-time search finds what a byte-by-byte search finds.
        #[test]
        fn plain_runs_end_where_a_byte_search_says(b in proptest::collection::vec(
            proptest::prop_oneof![
                6 => 0x20u8..=0xff,
                1 => proptest::prelude::any::<u8>(),
                1 => proptest::prelude::Just(b'"'),
            ],
            0..64,
        )) {
            let want = b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            proptest::prop_assert_eq!(plain_run(&b), want);
        }
    }

    #[test]
    fn flat_lines_are_read_and_others_left_to_the_general_reader() {
        assert_eq!(
            take(r#" {"a":"x","z":"q\"uote\\d","b":-12} "#),
            Some(vec![Value::str("x"), Value::Int(-12)])
        );
        assert_eq!(
            take(r#"{"b":2.5e1,"a":true,"c":null,"a":false}"#),
            Some(vec![Value::Bool(false), Value::Float(25.0)])
        );
        assert_eq!(take("{}"), Some(vec![Value::Null, Value::Null]));
        for other in [
            r#"{"a":"esc\"aped"}"#,
            r#"{"z":"\u00e9"}"#,
            r#"{"z":[1]}"#,
            r#"{"deep":1}"#,
            r#"{"a":01}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} x"#,
            r#"{"a":-}"#,
            r#"{"a":1."#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":99999999999999999999}"#,
            "[1]",
            "",
        ] {
            assert_eq!(take(other), None, "{other}");
        }
    }

    #[test]
    fn a_skipped_number_beyond_a_float_is_left_to_the_general_reader() {
        assert_eq!(take(r#"{"a":1,"c":1e400}"#), None);
        assert_eq!(take(&format!(r#"{{"a":1,"c":{}}}"#, "9".repeat(400))), None);
        let small = take(r#"{"a":1,"c":1e300,"d":123456789012345678901}"#);
        assert_eq!(small, Some(vec![Value::Int(1), Value::Null]));
    }
}
