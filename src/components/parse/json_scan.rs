//! The fast path of JSON lines: the wanted fields of one object per line, read straight from
//! the bytes, with serde_json's answers. It checks the whole line against the JSON grammar as
//! serde_json does (skipped values included, nested ones too), reads wanted scalars as
//! serde_json builds them, and gives up (`None`: the general reader then answers, its error
//! messages included) where that would take more: a wanted nested value, a `\u` escape in a key
//! or a wanted string, an escape in a key, nesting deeper than `MAX_DEPTH`, anything malformed.
//! String contents, the bulk of a line, are skipped by bit masks of its quotes, backslashes and
//! control characters, made sixteen bytes at a time.

use crate::tuple::Value;

/// The wanted paths as a tree: each node may be wanted itself (`slots`: where its value goes)
/// and have wanted children.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub(crate) slots: Vec<usize>,
    pub(crate) children: Vec<(String, Node)>,
}

impl Node {
    #[inline]
    pub(crate) fn child(&self, key: &str) -> Option<&Node> {
        self.children.iter().find(|(k, _)| k == key).map(|(_, n)| n)
    }

    /// Every slot at or under this node.
    pub(crate) fn slots(&self, out: &mut Vec<usize>) {
        out.extend(&self.slots);
        for (_, c) in &self.children {
            c.slots(out);
        }
    }

    /// Null into every slot at or under this node (a key written again replaces what an
    /// earlier one gave).
    fn clear(&self, out: &mut [Value]) -> Option<()> {
        for &s in &self.slots {
            *out.get_mut(s)? = Value::Null;
        }
        for (_, c) in &self.children {
            c.clear(out)?;
        }
        Some(())
    }
}

/// Nesting the fast path follows before it leaves a line to the general reader (whose own
/// limit is 128).
const MAX_DEPTH: u32 = 64;

/// The wanted values of `line` into `out` (slots as `root` numbers them, a later key of the
/// same name replacing an earlier one), or `None` when the general reader must read the line.
pub(crate) fn extract(line: &str, root: &Node, out: &mut [Value]) -> Option<()> {
    let mut s = Scan {
        b: line.as_bytes(),
        i: 0,
        block: 0,
        mask: 0,
    };
    s.load(0);
    s.ws();
    s.eat(b'{')?;
    s.object(line, root, out, 1)?;
    s.ws();
    (s.i == s.b.len()).then_some(())
}

/// Where a string has escapes.
#[derive(Clone, Copy, PartialEq)]
enum Escapes {
    None,
    /// Only the two-character ones (`\n`, `\"`, ...).
    Simple,
    /// At least one `\u` (its four hex digits checked).
    Unicode,
}

/// The bit of each byte of `block` that is a quote, a backslash or a control character: the
/// bytes where a string's plain run ends. SSE2 (every x86-64 has it) compares sixteen bytes at a
/// time.
#[cfg(target_arch = "x86_64")]
#[inline]
fn special_mask(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of x86-64, so every CPU this runs on has these instructions; each
    // load reads sixteen bytes of `block` (`chunks_exact(16)`), and an unaligned load may.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let control = _mm_set1_epi8(0x1f);
        let mut mask = 0u64;
        for (k, chunk) in block.chunks_exact(16).enumerate() {
            let x = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            // A byte is a control character when the larger of it and 0x1f is 0x1f.
            let low = _mm_cmpeq_epi8(_mm_max_epu8(x, control), control);
            let hit = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                low,
            );
            mask |= u64::from(_mm_movemask_epi8(hit) as u16) << (16 * k);
        }
        mask
    }
}

/// The same elsewhere, eight bytes at a time in a word.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn special_mask(block: &[u8; 64]) -> u64 {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let mut mask = 0u64;
    for (k, chunk) in block.chunks_exact(8).enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // The high bit of each byte below 0x80 that is zero; exact per byte, as no borrow
        // crosses bytes when each byte's high bit is added back first.
        let zeros = |y: u64| !(((y & !HIGHS) + !HIGHS) | y) & HIGHS;
        let special = zeros(x ^ (ONES * u64::from(b'"')))
            | zeros(x ^ (ONES * u64::from(b'\\')))
            | zeros(x & (ONES * 0xe0));
        for byte in 0..8 {
            mask |= ((special >> (8 * byte + 7)) & 1) << (8 * k + byte);
        }
    }
    mask
}

fn hex4(b: &[u8]) -> Option<()> {
    b.iter().all(u8::is_ascii_hexdigit).then_some(())
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    /// Where the 64 bytes of `mask` start: the quotes, backslashes and control characters of
    /// the line are found a block at a time, each block once, as the scan moves forward.
    block: usize,
    mask: u64,
}

impl Scan<'_> {
    /// The block of 64 bytes from `at` into `mask` (past the end of the line, no bits).
    #[inline]
    fn load(&mut self, at: usize) {
        self.block = at;
        self.mask = match self.b.get(at..at + 64) {
            Some(whole) => {
                let mut block = [0u8; 64];
                block.copy_from_slice(whole);
                special_mask(&block)
            }
            None => {
                // Padded with spaces, which are plain.
                let rest = self.b.get(at..).unwrap_or_default();
                let mut block = [b' '; 64];
                block[..rest.len()].copy_from_slice(rest);
                special_mask(&block)
            }
        };
    }

    /// The first quote, backslash or control character at or after `from`.
    #[inline]
    fn special_from(&mut self, mut from: usize) -> Option<usize> {
        loop {
            if from >= self.block + 64 {
                if from >= self.b.len() {
                    return None;
                }
                self.load(from);
            }
            let bits = self.mask & (!0u64 << (from - self.block));
            if bits != 0 {
                return Some(self.block + bits.trailing_zeros() as usize);
            }
            from = self.block + 64;
        }
    }

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

    /// The members of an object after its `{`, wanted ones into their slots; `depth` counts the
    /// objects and arrays open, this one included.
    fn object(&mut self, line: &str, node: &Node, out: &mut [Value], depth: u32) -> Option<()> {
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.eat(b'"')?;
            let (key, escapes) = self.string()?;
            if escapes != Escapes::None {
                return None;
            }
            let key = line.get(key.0..key.1)?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            match node.child(key) {
                None => self.skip(depth)?,
                Some(child) => self.field(line, child, out, depth)?,
            }
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// The value of a wanted key: read when the key itself is wanted, searched for wanted keys
    /// below when it is an object.
    fn field(&mut self, line: &str, node: &Node, out: &mut [Value], depth: u32) -> Option<()> {
        if !node.children.is_empty() {
            // A key written again: what an earlier one gave below goes.
            node.clear(out)?;
        }
        let open = matches!(self.b.get(self.i)?, b'{' | b'[');
        if node.slots.is_empty() && open {
            // Arrays hold no wanted keys (their contents are skipped); objects may.
            return match self.next()? {
                b'{' if depth < MAX_DEPTH => self.object(line, node, out, depth + 1),
                b'[' if depth < MAX_DEPTH => self.skip_array(depth + 1),
                _ => None,
            };
        }
        // A scalar (a nested wanted value is the general reader's): under a node with children
        // only, it is read as the general reader would, to refuse what it refuses.
        let v = self.value(line)?;
        if let Some((&last, rest)) = node.slots.split_last() {
            for &at in rest {
                *out.get_mut(at)? = v.clone();
            }
            *out.get_mut(last)? = v;
        }
        Some(())
    }

    /// A string after its opening quote: the byte range of its contents and what escapes it
    /// holds. Control characters are errors, as are escapes JSON does not have.
    #[inline]
    fn string(&mut self) -> Option<((usize, usize), Escapes)> {
        let start = self.i;
        let mut escapes = Escapes::None;
        loop {
            self.i = self.special_from(self.i)?;
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(((start, self.i - 1), escapes));
                }
                b'\\' => {}
                _ => return None,
            }
            match self.b.get(self.i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                    self.i += 2;
                    if escapes == Escapes::None {
                        escapes = Escapes::Simple;
                    }
                }
                b'u' => {
                    hex4(self.b.get(self.i + 2..self.i + 6)?)?;
                    self.i += 6;
                    escapes = Escapes::Unicode;
                }
                _ => return None,
            }
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

    /// Skip a value, checking it as the general reader checks a value it ignores: the grammar
    /// alone (a number's range and a `\u` escape's code point are not looked at).
    #[inline]
    fn skip(&mut self, depth: u32) -> Option<()> {
        match self.next()? {
            b'"' => self.string().map(|_| ()),
            b't' => self.literal(b"rue"),
            b'f' => self.literal(b"alse"),
            b'n' => self.literal(b"ull"),
            b'{' if depth < MAX_DEPTH => self.skip_object(depth + 1),
            b'[' if depth < MAX_DEPTH => self.skip_array(depth + 1),
            b'-' | b'0'..=b'9' => {
                self.i -= 1;
                self.number().map(|_| ())
            }
            _ => None,
        }
    }

    /// Skip the rest of an object after its `{`.
    #[inline(never)]
    fn skip_object(&mut self, depth: u32) -> Option<()> {
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.eat(b'"')?;
            self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            self.skip(depth)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// Skip the rest of an array after its `[`.
    #[inline(never)]
    fn skip_array(&mut self, depth: u32) -> Option<()> {
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.skip(depth)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b']' => return Some(()),
                _ => return None,
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
                    ((s, e), Escapes::None) => Some(Value::str(line.get(s..e)?)),
                    ((s, e), Escapes::Simple) => Some(Value::str(&unescape(line.get(s..e)?)?)),
                    (_, Escapes::Unicode) => None,
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

/// The text of a string's contents with its two-character escapes decoded (`None` at a `\u`,
/// which the caller has ruled out).
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(rest.get(..at)?);
        out.push(match rest.as_bytes().get(at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            _ => return None,
        });
        rest = rest.get(at + 2..)?;
    }
    out.push_str(rest);
    Some(out)
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

    /// Fields `a`, `b` and `deep.x`.
    fn take(line: &str) -> Option<Vec<Value>> {
        let leaf = |slot| Node {
            slots: vec![slot],
            children: Vec::new(),
        };
        let root = Node {
            slots: Vec::new(),
            children: vec![
                ("a".into(), leaf(0)),
                ("b".into(), leaf(1)),
                (
                    "deep".into(),
                    Node {
                        slots: Vec::new(),
                        children: vec![("x".into(), leaf(2))],
                    },
                ),
            ],
        };
        let mut out = vec![Value::Null; 3];
        extract(line, &root, &mut out).map(|()| out)
    }

    proptest::proptest! {
        /// The block masks find what a byte-by-byte search finds.
        #[test]
        fn masks_mark_what_a_byte_search_finds(b in proptest::collection::vec(
            proptest::prop_oneof![
                6 => 0x20u8..=0xff,
                1 => proptest::prelude::any::<u8>(),
                1 => proptest::prelude::Just(b'"'),
            ],
            0..200,
        ), from in 0usize..200) {
            let mut s = Scan { b: &b, i: 0, block: 0, mask: 0 };
            s.load(0);
            let from = from.min(b.len());
            let want = b[from..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            proptest::prop_assert_eq!(s.special_from(from), want.map(|p| from + p));
        }
    }

    #[test]
    fn lines_are_read_and_others_left_to_the_general_reader() {
        let null = Value::Null;
        assert_eq!(
            take(r#" {"a":"x","z":"q\"uote\\d","b":-12} "#),
            Some(vec![Value::str("x"), Value::Int(-12), null.clone()])
        );
        assert_eq!(
            take(r#"{"b":2.5e1,"a":true,"c":null,"a":false}"#),
            Some(vec![Value::Bool(false), Value::Float(25.0), null.clone()])
        );
        assert_eq!(take("{}"), Some(vec![null.clone(); 3]));
        // Nested values skipped, escapes in wanted strings decoded, paths followed.
        assert_eq!(
            take(
                r#"{"z":[1,{"q":[]}],"a":"esc\"aped\t","deep":{"x":"s"},"deep":{"y":[{}],"x":2}}"#
            ),
            Some(vec![Value::str("esc\"aped\t"), null.clone(), Value::Int(2)])
        );
        // A path through a non-object is null; a later key replaces what an earlier gave.
        assert_eq!(
            take(r#"{"deep":{"x":1},"deep":"s","z":"\u00e9"}"#),
            Some(vec![null.clone(); 3])
        );
        for other in [
            r#"{"a":"\u00e9"}"#,
            r#"{"\u0061":1}"#,
            r#"{"\"":1}"#,
            r#"{"a":[1]}"#,
            r#"{"deep":"\ud800"}"#,
            r#"{"z":"\x"}"#,
            r#"{"z":"\u00g9"}"#,
            r#"{"z":[1,]}"#,
            r#"{"z":{"q"}}"#,
            r#"{"z":{1:2}}"#,
            r#"{"a":01}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} x"#,
            r#"{"a":-}"#,
            r#"{"a":1."#,
            r#"{"z":[1"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":99999999999999999999}"#,
            r#"{"a":-0}"#,
            "[1]",
            "",
        ] {
            assert_eq!(take(other), None, "{other}");
        }
    }

    /// A value the general reader ignores is checked for its grammar alone, as serde_json
    /// checks an ignored value: a number beyond a float's range is fine there.
    #[test]
    fn skipped_values_are_checked_as_the_general_reader_checks_them() {
        let null = Value::Null;
        let huge = format!(
            r#"{{"a":1,"c":1e400,"d":{},"e":"\ud800"}}"#,
            "9".repeat(400)
        );
        assert_eq!(take(&huge), Some(vec![Value::Int(1), null.clone(), null]));
        let deep = format!("{{\"z\":{}{}}}", "[".repeat(200), "]".repeat(200));
        assert_eq!(take(&deep), None);
    }
}
