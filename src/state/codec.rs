//! Typed values as compact bytes, for the store's keys and values: a tag byte, then varints
//! for numbers and lengths. Keys encode so that equal values give equal bytes.

use crate::tuple::Value;

/// Append `v`'s encoding to `out`.
pub fn encode(v: &Value, out: &mut Vec<u8>) {
    let _ = (v, out);
    todo!()
}

/// Decode one value from the front of `bytes`: the value and the bytes it took.
pub fn decode(bytes: &[u8]) -> anyhow::Result<(Value, usize)> {
    let _ = bytes;
    todo!()
}
