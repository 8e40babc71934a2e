//! Typed values as compact bytes, for the store's keys and values: a tag byte, then varints
//! for numbers and lengths. Keys encode so that equal values give equal bytes.
//!
//! | tag | value | then |
//! | --- | --- | --- |
//! | 0 | Null | nothing |
//! | 1, 2 | false, true | nothing |
//! | 3 | Int | its zigzag varint (small magnitudes take one byte) |
//! | 4 | Float | its bits, 8 bytes little-endian (as `Value`'s hash takes them: `-0.0` and `0.0` differ) |
//! | 5 | Str | byte length (varint), UTF-8 bytes |
//! | 6 | List | item count (varint), the items |
//! | 7 | Map | entry count (varint), each key (length, bytes) then value, keys in order |
//!
//! Decoding checks every length against the bytes left and bounds nesting, so bad bytes give
//! an error naming the byte offset, never a panic or a huge allocation.

use crate::tuple::Value;
use anyhow::bail;
use std::collections::BTreeMap;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 4;
const STR: u8 = 5;
const LIST: u8 = 6;
const MAP: u8 = 7;

/// Lists and maps nest at most this deep in decoded bytes (deeper is taken as corruption: it
/// would otherwise exhaust the stack).
const MAX_DEPTH: usize = 512;

/// Append `v`'s encoding to `out`.
pub(crate) fn encode(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Int(i) => {
            out.push(INT);
            put_varint(zigzag(*i), out);
        }
        Value::Float(f) => {
            out.push(FLOAT);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::Str(s) => {
            out.push(STR);
            put_bytes(s.as_bytes(), out);
        }
        Value::List(items) => {
            out.push(LIST);
            put_varint(items.len() as u64, out);
            items.iter().for_each(|item| encode(item, out));
        }
        Value::Map(entries) => {
            out.push(MAP);
            put_varint(entries.len() as u64, out);
            for (k, v) in entries.iter() {
                put_bytes(k.as_bytes(), out);
                encode(v, out);
            }
        }
    }
}

/// `v`'s encoding on its own.
pub(crate) fn to_bytes(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode(v, &mut out);
    out
}

/// Decode one value from the front of `bytes`: the value and the bytes it took.
pub(crate) fn decode(bytes: &[u8]) -> anyhow::Result<(Value, usize)> {
    let mut r = ByteCursor { bytes, pos: 0 };
    let v = r.value(0)?;
    Ok((v, r.pos))
}

/// Decode `bytes` holding exactly one value (bytes left over are an error).
pub(crate) fn from_bytes(bytes: &[u8]) -> anyhow::Result<Value> {
    let (v, used) = decode(bytes)?;
    if used != bytes.len() {
        bail!(
            "at byte {used}: {} byte(s) left after the value",
            bytes.len() - used
        );
    }
    Ok(v)
}

fn zigzag(i: i64) -> u64 {
    ((i << 1) ^ (i >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// LEB128: seven bits a byte, low bits first, the high bit set on all but the last byte.
fn put_varint(mut u: u64, out: &mut Vec<u8>) {
    while u >= 0x80 {
        out.push((u as u8) | 0x80);
        u >>= 7;
    }
    out.push(u as u8);
}

fn put_bytes(b: &[u8], out: &mut Vec<u8>) {
    put_varint(b.len() as u64, out);
    out.extend_from_slice(b);
}

/// Reads values from bytes, knowing where it is for errors.
struct ByteCursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl ByteCursor<'_> {
    fn value(&mut self, depth: usize) -> anyhow::Result<Value> {
        let at = self.pos;
        let tag = self.byte()?;
        Ok(match tag {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            INT => Value::Int(unzigzag(self.varint()?)),
            FLOAT => {
                let b = self.take(8)?;
                let mut eight = [0u8; 8];
                eight.copy_from_slice(b);
                Value::Float(f64::from_bits(u64::from_le_bytes(eight)))
            }
            STR => Value::str(self.str()?),
            LIST | MAP if depth >= MAX_DEPTH => {
                bail!("at byte {at}: lists or maps nested over {MAX_DEPTH} deep")
            }
            LIST => self.list(depth)?,
            MAP => self.map(depth)?,
            other => bail!("at byte {at}: unknown value tag {other}"),
        })
    }

    fn list(&mut self, depth: usize) -> anyhow::Result<Value> {
        // Every item takes at least one byte: a count above the bytes left is corruption, and
        // bounding it so keeps the allocation in line with the input.
        let n = self.count()?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::List(Box::new(items)))
    }

    fn map(&mut self, depth: usize) -> anyhow::Result<Value> {
        let n = self.count()?;
        let mut entries = BTreeMap::new();
        for _ in 0..n {
            let at = self.pos;
            let key = self.str()?.to_string();
            let value = self.value(depth + 1)?;
            if entries.insert(key, value).is_some() {
                bail!("at byte {at}: a map key repeated");
            }
        }
        Ok(Value::Map(Box::new(entries)))
    }

    fn byte(&mut self) -> anyhow::Result<u8> {
        let Some(&b) = self.bytes.get(self.pos) else {
            bail!("at byte {}: the value is cut short", self.pos);
        };
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> anyhow::Result<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            bail!(
                "at byte {}: {n} byte(s) wanted, {} left",
                self.pos,
                self.bytes.len() - self.pos
            );
        };
        let b = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(b)
    }

    fn varint(&mut self) -> anyhow::Result<u64> {
        let at = self.pos;
        let mut u: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                break;
            }
            u |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(u);
            }
        }
        bail!("at byte {at}: a number longer than 64 bits")
    }

    /// A length or count, at most the bytes left (each counted thing takes one at least).
    fn count(&mut self) -> anyhow::Result<usize> {
        let at = self.pos;
        let n = self.varint()?;
        let left = self.bytes.len() - self.pos;
        match usize::try_from(n) {
            Ok(n) if n <= left => Ok(n),
            _ => bail!("at byte {at}: a length of {n} with {left} byte(s) left"),
        }
    }

    fn str(&mut self) -> anyhow::Result<&str> {
        let n = self.count()?;
        let at = self.pos;
        match std::str::from_utf8(self.take(n)?) {
            Ok(s) => Ok(s),
            Err(e) => bail!(
                "at byte {}: invalid UTF-8 in a string",
                at + e.valid_up_to()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            any::<u64>().prop_map(|b| Value::Float(f64::from_bits(b))),
            ".{0,12}".prop_map(|s| Value::str(&s)),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(|v| Value::List(Box::new(v))),
                prop::collection::btree_map(".{0,6}", inner, 0..8)
                    .prop_map(|m| Value::Map(Box::new(m))),
            ]
        })
    }

    /// Equal as bit patterns (a NaN equals itself), which `==` on floats is not.
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
            (Value::List(x), Value::List(y)) => {
                x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b))
            }
            (Value::Map(x), Value::Map(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y.iter())
                        .all(|((ka, a), (kb, b))| ka == kb && same(a, b))
            }
            _ => a == b,
        }
    }

    proptest! {
        #[test]
        fn values_round_trip(v in arb_value(), tail in prop::collection::vec(any::<u8>(), 0..4)) {
            let mut bytes = to_bytes(&v);
            let len = bytes.len();
            bytes.extend_from_slice(&tail);
            let (back, used) = decode(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(same(&back, &v), "{back:?} != {v:?}");
            prop_assert_eq!(used, len, "the value's own bytes only");
        }

        #[test]
        fn bad_bytes_give_errors_not_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn cut_encodings_are_errors(v in arb_value()) {
            let bytes = to_bytes(&v);
            for cut in 0..bytes.len() {
                prop_assert!(from_bytes(&bytes[..cut]).is_err());
            }
        }
    }

    #[test]
    fn small_numbers_and_strings_are_compact() {
        assert_eq!(to_bytes(&Value::Int(0)), [INT, 0]);
        assert_eq!(to_bytes(&Value::Int(-1)), [INT, 1]);
        assert_eq!(to_bytes(&Value::Int(63)), [INT, 126]);
        assert_eq!(to_bytes(&Value::Int(64)), [INT, 0x80, 1]);
        assert_eq!(to_bytes(&Value::str("ab")), [STR, 2, b'a', b'b']);
        assert_eq!(to_bytes(&Value::Int(i64::MIN)).len(), 11);
    }

    #[test]
    fn errors_name_the_byte() {
        let err = |b: &[u8]| {
            format!(
                "{:#}",
                from_bytes(b).err().map_or(String::new(), |e| e.to_string())
            )
        };
        assert_eq!(err(&[9]), "at byte 0: unknown value tag 9");
        assert_eq!(
            err(&[LIST, 1, STR, 5, b'a']),
            "at byte 3: a length of 5 with 1 byte(s) left"
        );
        assert_eq!(err(&[STR, 1, 0xff]), "at byte 2: invalid UTF-8 in a string");
        assert_eq!(
            err(&[NULL, NULL]),
            "at byte 1: 1 byte(s) left after the value"
        );
        assert_eq!(err(&[INT, 0xff]), "at byte 2: the value is cut short");
        let long = [
            INT, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ];
        assert_eq!(err(&long), "at byte 1: a number longer than 64 bits");
        assert_eq!(
            err(&[MAP, 2, 1, b'k', NULL, 1, b'k', NULL]),
            "at byte 5: a map key repeated"
        );
        let deep: Vec<u8> = std::iter::repeat_n([LIST, 1], 600).flatten().collect();
        assert!(err(&deep).contains("nested over 512 deep"));
    }
}
