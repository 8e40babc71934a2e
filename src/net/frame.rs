//! The wire frame codec: pure, no I/O. A frame is a fixed big-endian header — payload length
//! (u32), kind (u8), destination task (u32) — then a compact payload. A tuple frame carries a
//! batch for its one destination task, as executors send them. Used for every message
//! that crosses workers, in memory (local mode) or over TCP.
//!
//! Decoding never panics and never allocates more than the bytes it was given justify: every
//! count is checked against what remains before anything is reserved.

use crate::runtime::message::Acks;
use crate::tuple::{Anchor, Tuple, Value};
use compact_str::CompactString;

pub const HEADER_LEN: usize = 9;
/// Frames larger than this are refused (the connection is dropped, not the worker).
pub const MAX_FRAME: usize = 64 << 20;

/// What a frame carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// Tuples for task `task` of the receiving worker.
    Tuples { task: u32, tuples: Vec<Tuple> },
    /// Acker traffic for a task of the receiving worker.
    Acks(Acks),
    /// End of input from task `from` to task `to`.
    Eos { from: u32, to: u32 },
    /// Opaque control payload (handshakes, heartbeats): kind ≥ 16.
    Control { kind: u8, body: Vec<u8> },
}

const KIND_TUPLES: u8 = 1;
/// The fewest bytes a tuple takes: source task, stream, and the two counts.
const TUPLE_MIN: usize = 4 + 2 + 4 + 4;
const KIND_EOS: u8 = 2;
const KIND_ACKS: u8 = 3;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("frame of {0} bytes is over the limit of {MAX_FRAME}")]
    TooLarge(usize),
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    #[error("malformed frame payload: {0}")]
    Malformed(&'static str),
}

/// Append one encoded frame to `out`.
pub fn encode(frame: &Frame, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    let (kind, dest) = match frame {
        Frame::Tuples { task, tuples } => {
            put_u32(out, tuples.len() as u32);
            for t in tuples {
                put_u32(out, t.source_task);
                out.extend_from_slice(&t.stream.to_be_bytes());
                put_u32(out, t.anchors.len() as u32);
                for a in &t.anchors {
                    out.extend_from_slice(&a.root.to_be_bytes());
                    out.extend_from_slice(&a.ack.get().to_be_bytes());
                }
                put_u32(out, t.values.len() as u32);
                for v in &t.values {
                    put_value(out, v);
                }
            }
            (KIND_TUPLES, *task)
        }
        Frame::Acks(a) => {
            put_u32(out, a.from);
            out.extend_from_slice(&a.stream.to_be_bytes());
            put_u32(out, a.pairs.len() as u32);
            for (root, val) in &a.pairs {
                out.extend_from_slice(&root.to_be_bytes());
                out.extend_from_slice(&val.to_be_bytes());
            }
            (KIND_ACKS, a.task)
        }
        Frame::Eos { from, to } => {
            put_u32(out, *from);
            (KIND_EOS, *to)
        }
        Frame::Control { kind, body } => {
            out.extend_from_slice(body);
            (*kind, 0)
        }
    };
    let len = (out.len() - start - HEADER_LEN) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    out[start + 4] = kind;
    out[start + 5..start + 9].copy_from_slice(&dest.to_be_bytes());
}

/// Decode one frame from the front of `buf`. `Ok(None)` means more bytes are needed;
/// `Ok(Some((frame, used)))` consumed `used` bytes.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, DecodeError> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_FRAME {
        return Err(DecodeError::TooLarge(len));
    }
    if buf.len() < HEADER_LEN + len {
        return Ok(None);
    }
    let kind = buf[4];
    let dest = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]);
    let mut r = Reader {
        buf: &buf[HEADER_LEN..HEADER_LEN + len],
    };
    let frame = match kind {
        KIND_TUPLES => {
            let n = r.count(TUPLE_MIN)?;
            let mut tuples = Vec::with_capacity(n);
            for _ in 0..n {
                let source_task = r.u32()?;
                let stream = r.u16()?;
                let na = r.count(16)?;
                let mut anchors = crate::tuple::Anchors::with_capacity(na);
                for _ in 0..na {
                    anchors.push(Anchor::new(r.u64()?, r.u64()?));
                }
                let nv = r.count(1)?;
                let mut values = crate::tuple::Values::with_capacity(nv);
                for _ in 0..nv {
                    values.push(r.value(0)?);
                }
                tuples.push(Tuple {
                    values,
                    source_task,
                    stream,
                    anchors,
                });
            }
            Frame::Tuples { task: dest, tuples }
        }
        KIND_ACKS => {
            let from = r.u32()?;
            let stream = r.u16()?;
            let n = r.count(16)?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                pairs.push((r.u64()?, r.u64()?));
            }
            Frame::Acks(Acks {
                task: dest,
                from,
                stream,
                pairs,
            })
        }
        KIND_EOS => Frame::Eos {
            from: r.u32()?,
            to: dest,
        },
        k if k >= 16 => Frame::Control {
            kind: k,
            body: r.buf.to_vec(),
        },
        k => return Err(DecodeError::UnknownKind(k)),
    };
    if !r.buf.is_empty() && !matches!(frame, Frame::Control { .. }) {
        return Err(DecodeError::Malformed("trailing bytes"));
    }
    Ok(Some((frame, HEADER_LEN + len)))
}

/// Check the frame at the front of `buf` without building it: the same answer as `decode`
/// (`Ok(None)` for more bytes needed, the length used, or the error) but no allocation, so the
/// network side can refuse bad frames cheaply before the worker decodes them.
pub fn validate(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_FRAME {
        return Err(DecodeError::TooLarge(len));
    }
    if buf.len() < HEADER_LEN + len {
        return Ok(None);
    }
    let mut r = Reader {
        buf: &buf[HEADER_LEN..HEADER_LEN + len],
    };
    match buf[4] {
        KIND_TUPLES => {
            let n = r.count(TUPLE_MIN)?;
            for _ in 0..n {
                r.take(6)?;
                let na = r.count(16)?;
                r.take(na * 16)?;
                let nv = r.count(1)?;
                for _ in 0..nv {
                    r.skip_value(0)?;
                }
            }
        }
        KIND_ACKS => {
            r.take(6)?;
            let n = r.count(16)?;
            r.take(n * 16)?;
        }
        KIND_EOS => {
            r.u32()?;
        }
        k if k >= 16 => return Ok(Some(HEADER_LEN + len)),
        k => return Err(DecodeError::UnknownKind(k)),
    }
    if !r.buf.is_empty() {
        return Err(DecodeError::Malformed("trailing bytes"));
    }
    Ok(Some(HEADER_LEN + len))
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0),
        Value::Bool(false) => out.push(1),
        Value::Bool(true) => out.push(2),
        Value::Int(i) => {
            out.push(3);
            out.extend_from_slice(&i.to_be_bytes());
        }
        Value::Float(f) => {
            out.push(4);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        Value::Str(s) => {
            out.push(5);
            put_u32(out, s.len() as u32);
            out.extend_from_slice(s.as_bytes());
        }
        Value::List(l) => {
            out.push(6);
            put_u32(out, l.len() as u32);
            for x in l.iter() {
                put_value(out, x);
            }
        }
        Value::Map(m) => {
            out.push(7);
            put_u32(out, m.len() as u32);
            for (k, x) in m.iter() {
                put_u32(out, k.len() as u32);
                out.extend_from_slice(k.as_bytes());
                put_value(out, x);
            }
        }
    }
}

/// Nesting deeper than this is refused (bounded recursion on hostile input).
const MAX_DEPTH: usize = 64;

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError::Malformed("truncated"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    /// A count of items each at least `min_size` bytes long, checked against what remains.
    fn count(&mut self, min_size: usize) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_size.max(1)) > self.buf.len() {
            return Err(DecodeError::Malformed("count larger than the frame"));
        }
        Ok(n)
    }
    fn string(&mut self) -> Result<&'a str, DecodeError> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        std::str::from_utf8(b).map_err(|_| DecodeError::Malformed("invalid UTF-8"))
    }
    /// Walk over one value as `value` reads it, checking the same things, building nothing.
    fn skip_value(&mut self, depth: usize) -> Result<(), DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::Malformed("values nested too deep"));
        }
        match self.take(1)?[0] {
            0..=2 => {}
            3 | 4 => {
                self.take(8)?;
            }
            5 => {
                self.string()?;
            }
            6 => {
                for _ in 0..self.count(1)? {
                    self.skip_value(depth + 1)?;
                }
            }
            7 => {
                for _ in 0..self.count(5)? {
                    self.string()?;
                    self.skip_value(depth + 1)?;
                }
            }
            _ => return Err(DecodeError::Malformed("unknown value tag")),
        }
        Ok(())
    }
    fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::Malformed("values nested too deep"));
        }
        let tag = self.take(1)?[0];
        Ok(match tag {
            0 => Value::Null,
            1 => Value::Bool(false),
            2 => Value::Bool(true),
            3 => Value::Int(self.u64()? as i64),
            4 => Value::Float(f64::from_bits(self.u64()?)),
            5 => Value::Str(CompactString::new(self.string()?)),
            6 => {
                let n = self.count(1)?;
                let mut l = Vec::with_capacity(n);
                for _ in 0..n {
                    l.push(self.value(depth + 1)?);
                }
                Value::List(Box::new(l))
            }
            7 => {
                let n = self.count(5)?;
                let mut m = std::collections::BTreeMap::new();
                for _ in 0..n {
                    let k = self.string()?.to_string();
                    m.insert(k, self.value(depth + 1)?);
                }
                Value::Map(Box::new(m))
            }
            _ => return Err(DecodeError::Malformed("unknown value tag")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            (-1e9f64..1e9).prop_map(Value::Float),
            ".{0,30}".prop_map(|s| Value::str(&s)),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|l| Value::List(Box::new(l))),
                proptest::collection::btree_map("[a-z]{0,4}", inner, 0..4)
                    .prop_map(|m| Value::Map(Box::new(m))),
            ]
        })
    }

    fn frame() -> impl Strategy<Value = Frame> {
        let tuple = (
            any::<u32>(),
            any::<u16>(),
            proptest::collection::vec((any::<u64>(), any::<u64>()), 0..2),
            proptest::collection::vec(value(), 0..4),
        )
            .prop_map(|(src, stream, anchors, values)| Tuple {
                values: values.into(),
                source_task: src,
                stream,
                anchors: anchors
                    .into_iter()
                    .map(|(root, edge)| Anchor::new(root, edge))
                    .collect(),
            });
        prop_oneof![
            (any::<u32>(), proptest::collection::vec(tuple, 0..5))
                .prop_map(|(task, tuples)| Frame::Tuples { task, tuples }),
            (
                any::<u32>(),
                any::<u32>(),
                any::<u16>(),
                proptest::collection::vec((any::<u64>(), any::<u64>()), 0..5)
            )
                .prop_map(|(task, from, stream, pairs)| Frame::Acks(Acks {
                    task,
                    from,
                    stream,
                    pairs
                })),
            (any::<u32>(), any::<u32>()).prop_map(|(from, to)| Frame::Eos { from, to }),
            (16u8.., proptest::collection::vec(any::<u8>(), 0..20))
                .prop_map(|(kind, body)| Frame::Control { kind, body }),
        ]
    }

    proptest! {
        #[test]
        fn frames_round_trip(frames in proptest::collection::vec(frame(), 1..4)) {
            let mut buf = Vec::new();
            for f in &frames { encode(f, &mut buf); }
            let mut at = 0;
            for f in &frames {
                let (got, used) = decode(&buf[at..]).unwrap().unwrap();
                prop_assert_eq!(&got, f);
                at += used;
            }
            prop_assert_eq!(at, buf.len());
        }

        #[test]
        fn split_streams_decode_the_same(frames in proptest::collection::vec(frame(), 1..4), cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
            let mut buf = Vec::new();
            for f in &frames { encode(f, &mut buf); }
            // Feed the bytes in pieces, as a socket would deliver them.
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (buf.len() + 1)).collect();
            points.sort();
            let mut pending: Vec<u8> = Vec::new();
            let mut got = Vec::new();
            let mut last = 0;
            for p in points.into_iter().chain([buf.len()]) {
                pending.extend_from_slice(&buf[last..p]);
                last = p;
                while let Some((f, used)) = decode(&pending).unwrap() {
                    got.push(f);
                    pending.drain(..used);
                }
            }
            prop_assert_eq!(got, frames);
        }

        #[test]
        fn validate_agrees_with_decode(frames in proptest::collection::vec(frame(), 1..3), flip in any::<usize>(), byte in any::<u8>()) {
            let mut buf = Vec::new();
            for f in &frames { encode(f, &mut buf); }
            prop_assert_eq!(validate(&buf), decode(&buf).map(|o| o.map(|(_, used)| used)));
            // A corrupted byte: both accept or both refuse, alike.
            let i = flip % buf.len();
            buf[i] = byte;
            prop_assert_eq!(validate(&buf), decode(&buf).map(|o| o.map(|(_, used)| used)));
        }

        #[test]
        fn validate_agrees_on_garbage(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(validate(&bytes), decode(&bytes).map(|o| o.map(|(_, used)| used)));
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }
    }

    /// Found by fuzzing (`fuzz/fuzz_targets/frame.rs`): a NaN value is not equal to itself, so
    /// a frame holding one is compared by its bytes; they must survive a round trip exactly.
    #[test]
    fn nan_values_round_trip_bit_for_bit() {
        let nan = f64::from_bits(0x7ff8_0000_0000_0abc);
        let f = Frame::Tuples {
            task: 3,
            tuples: vec![Tuple {
                values: vec![Value::Float(nan), Value::Int(42)].into(),
                source_task: 4,
                stream: 0,
                anchors: Default::default(),
            }],
        };
        let mut once = Vec::new();
        encode(&f, &mut once);
        let (back, used) = decode(&once).unwrap().unwrap();
        assert_eq!(used, once.len());
        let mut twice = Vec::new();
        encode(&back, &mut twice);
        assert_eq!(once, twice);
    }

    #[test]
    fn oversized_frames_are_refused() {
        let mut b = vec![0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0];
        b.extend_from_slice(&[0; 8]);
        assert_eq!(decode(&b), Err(DecodeError::TooLarge(0xffff_ffff)));
    }
}
