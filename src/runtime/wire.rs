//! The runtime's wire codec: tuples, acker traffic, end-of-input markers and congestion as the payloads of
//! the transport's data frames (`net::frame`), for every message that crosses workers, in
//! memory (local mode) or over TCP. A tuple frame carries a batch for its one destination
//! task, as executors send them. A frame carries one [`Message`], the type executors queue.
//! Pure, no I/O.
//!
//! Decoding never panics and never allocates more than the bytes it was given justify: every
//! count is checked against what remains before anything is reserved.

use super::checkpoint::{Marker, Verdict};
use super::message::{Acks, Message};
use crate::net::frame::{self as net_frame, DecodeError, FIRST_CONTROL};
use crate::tuple::{Anchor, Anchors, Tuple, Value, Values};
use compact_str::CompactString;

const KIND_TUPLES: u8 = 1;
/// The fewest bytes a tuple takes: source task, stream, and the two counts.
const TUPLE_MIN: usize = 4 + 2 + 4 + 4;
const KIND_EOS: u8 = 2;
const KIND_ACKS: u8 = 3;
const KIND_MARKER: u8 = 4;
const KIND_CONGESTION: u8 = 5;
/// The fewest bytes a marker takes: source task, round, txid flag and value, verdict count.
const MARKER_MIN: usize = 4 + 8 + 1 + 8 + 4;
/// The fewest bytes a verdict takes: spout task, low, failure count.
const VERDICT_MIN: usize = 4 + 8 + 4;

/// Append `frame` encoded to `out` (nothing for a [`Message::Wake`], which is never sent).
pub fn encode(frame: &Message, out: &mut Vec<u8>) {
    let start = net_frame::begin(out);
    let (kind, dest) = match frame {
        Message::Tuples { task, tuples } => {
            put_tuples(out, tuples);
            (KIND_TUPLES, *task)
        }
        Message::Acks(a) => {
            put_u32(out, a.from);
            out.extend_from_slice(&a.stream.to_be_bytes());
            put_u32(out, a.pairs.len() as u32);
            for (root, val) in &a.pairs {
                out.extend_from_slice(&root.to_be_bytes());
                out.extend_from_slice(&val.to_be_bytes());
            }
            (KIND_ACKS, a.task)
        }
        Message::Eos { from, to } => {
            put_u32(out, *from);
            (KIND_EOS, *to)
        }
        Message::Marker { from, to, marker } => {
            put_marker(out, *from, marker);
            (KIND_MARKER, *to)
        }
        Message::Congestion { worker, on } => {
            out.push(u8::from(*on));
            (KIND_CONGESTION, *worker)
        }
        Message::Control { kind, body } => {
            out.extend_from_slice(body);
            (*kind, 0)
        }
        Message::Wake => {
            out.truncate(start);
            return;
        }
    };
    net_frame::end(out, start, kind, dest);
}

fn put_marker(out: &mut Vec<u8>, from: u32, m: &Marker) {
    put_u32(out, from);
    out.extend_from_slice(&m.round.to_be_bytes());
    out.push(u8::from(m.txid.is_some()));
    out.extend_from_slice(&m.txid.unwrap_or(0).to_be_bytes());
    put_u32(out, m.verdicts.len() as u32);
    for v in &m.verdicts {
        put_u32(out, v.spout);
        out.extend_from_slice(&v.low.to_be_bytes());
        put_u32(out, v.failed.len() as u32);
        for f in &v.failed {
            out.extend_from_slice(&f.to_be_bytes());
        }
    }
}

fn put_tuples(out: &mut Vec<u8>, tuples: &[Tuple]) {
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
}

/// Decode one frame from the front of `buf`. `Ok(None)` means more bytes are needed;
/// `Ok(Some((frame, used)))` consumed `used` bytes.
pub fn decode(buf: &[u8]) -> Result<Option<(Message, usize)>, DecodeError> {
    let Some(f) = net_frame::split(buf)? else {
        return Ok(None);
    };
    let mut r = ByteCursor { buf: f.body };
    let frame = match f.kind {
        KIND_TUPLES => Message::Tuples {
            task: f.dest,
            tuples: r.tuples()?,
        },
        KIND_ACKS => {
            let from = r.u32()?;
            let stream = r.u16()?;
            let n = r.count(16)?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                pairs.push((r.u64()?, r.u64()?));
            }
            Message::Acks(Acks {
                task: f.dest,
                from,
                stream,
                pairs,
            })
        }
        KIND_EOS => Message::Eos {
            from: r.u32()?,
            to: f.dest,
        },
        KIND_MARKER => {
            let (from, marker) = r.marker()?;
            Message::Marker {
                from,
                to: f.dest,
                marker: std::sync::Arc::new(marker),
            }
        }
        KIND_CONGESTION => Message::Congestion {
            worker: f.dest,
            on: r.u8()? != 0,
        },
        k if k >= FIRST_CONTROL => Message::Control {
            kind: k,
            body: r.buf.to_vec(),
        },
        k => return Err(DecodeError::UnknownKind(k)),
    };
    if !r.buf.is_empty() && !matches!(frame, Message::Control { .. }) {
        return Err(DecodeError::Malformed("trailing bytes"));
    }
    Ok(Some((frame, f.used)))
}

/// Check the frame at the front of `buf` without building it: the same answer as `decode`
/// (`Ok(None)` for more bytes needed, the length used, or the error) but no allocation.
pub fn validate(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    net_frame::validate(buf, check)
}

/// The payload check the network runs on every data frame it receives (see `net::frame::Check`).
pub fn check(kind: u8, body: &[u8]) -> Result<(), DecodeError> {
    let mut r = ByteCursor { buf: body };
    match kind {
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
        KIND_MARKER => {
            r.marker()?;
        }
        KIND_CONGESTION => {
            r.u8()?;
        }
        k => return Err(DecodeError::UnknownKind(k)),
    }
    if !r.buf.is_empty() {
        return Err(DecodeError::Malformed("trailing bytes"));
    }
    Ok(())
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

struct ByteCursor<'a> {
    buf: &'a [u8],
}

impl<'a> ByteCursor<'a> {
    /// A batch of tuples: the payload of a tuples frame.
    fn tuples(&mut self) -> Result<Vec<Tuple>, DecodeError> {
        let n = self.count(TUPLE_MIN)?;
        let mut tuples = Vec::with_capacity(n);
        for _ in 0..n {
            let source_task = self.u32()?;
            let stream = self.u16()?;
            let na = self.count(16)?;
            let mut anchors = Anchors::with_capacity(na);
            for _ in 0..na {
                anchors.push(Anchor::new(self.u64()?, self.u64()?));
            }
            let nv = self.count(1)?;
            let mut values = Values::with_capacity(nv);
            for _ in 0..nv {
                values.push(self.value(0)?);
            }
            tuples.push(Tuple {
                values,
                source_task,
                stream,
                anchors,
            });
        }
        Ok(tuples)
    }
    /// A marker's source task and the marker: the payload of a marker frame.
    fn marker(&mut self) -> Result<(u32, Marker), DecodeError> {
        if self.buf.len() < MARKER_MIN {
            return Err(DecodeError::Malformed("truncated"));
        }
        let from = self.u32()?;
        let round = self.u64()?;
        let has_txid = self.take(1)?[0];
        let txid = self.u64()?;
        let n = self.count(VERDICT_MIN)?;
        let mut verdicts = Vec::with_capacity(n);
        for _ in 0..n {
            let spout = self.u32()?;
            let low = self.u64()?;
            let nf = self.count(8)?;
            let mut failed = Vec::with_capacity(nf);
            for _ in 0..nf {
                failed.push(self.u64()?);
            }
            verdicts.push(Verdict { spout, low, failed });
        }
        let marker = Marker {
            round,
            txid: (has_txid != 0).then_some(txid),
            verdicts,
        };
        Ok((from, marker))
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError::Malformed("truncated"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
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

    fn frame() -> impl Strategy<Value = Message> {
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
                .prop_map(|(task, tuples)| Message::Tuples { task, tuples }),
            (
                any::<u32>(),
                any::<u32>(),
                any::<u16>(),
                proptest::collection::vec((any::<u64>(), any::<u64>()), 0..5)
            )
                .prop_map(|(task, from, stream, pairs)| Message::Acks(Acks {
                    task,
                    from,
                    stream,
                    pairs
                })),
            (any::<u32>(), any::<u32>()).prop_map(|(from, to)| Message::Eos { from, to }),
            (
                any::<u32>(),
                any::<u32>(),
                any::<u64>(),
                any::<Option<u64>>(),
                proptest::collection::vec(
                    (
                        any::<u32>(),
                        any::<u64>(),
                        proptest::collection::vec(any::<u64>(), 0..4)
                    ),
                    0..3
                )
            )
                .prop_map(|(from, to, round, txid, vs)| Message::Marker {
                    from,
                    to,
                    marker: std::sync::Arc::new(Marker {
                        round,
                        txid,
                        verdicts: vs
                            .into_iter()
                            .map(|(spout, low, failed)| Verdict { spout, low, failed })
                            .collect(),
                    }),
                }),
            (any::<u32>(), any::<bool>())
                .prop_map(|(worker, on)| Message::Congestion { worker, on }),
            (16u8.., proptest::collection::vec(any::<u8>(), 0..20))
                .prop_map(|(kind, body)| Message::Control { kind, body }),
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
        let f = Message::Tuples {
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

/// Reassembly of a byte stream with this codec's check, as the network runs it.
#[cfg(test)]
mod reassembly_tests {
    use super::*;
    use crate::net::reassembly::Reassembly;
    use proptest::prelude::*;

    fn frames() -> impl Strategy<Value = Vec<Message>> {
        let f = prop_oneof![
            (any::<u32>(), any::<u32>()).prop_map(|(from, to)| Message::Eos { from, to }),
            (16u8.., proptest::collection::vec(any::<u8>(), 0..40))
                .prop_map(|(kind, body)| Message::Control { kind, body }),
        ];
        proptest::collection::vec(f, 0..6)
    }

    proptest! {
        /// However the stream is cut, the buffers handed on are exactly the frames sent, whole.
        #[test]
        fn any_cut_yields_the_same_whole_frames(fs in frames(), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
            let mut bytes = Vec::new();
            for f in &fs { encode(f, &mut bytes); }
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort();
            let mut r = Reassembly::new(1 << 20, check);
            let mut out = Vec::new();
            let mut last = 0;
            for p in points.into_iter().chain([bytes.len()]) {
                let whole = r.push(&bytes[last..p]).unwrap();
                // Each buffer handed on is whole frames only.
                let mut at = 0;
                while at < whole.len() {
                    let (_, used) = decode(&whole[at..]).unwrap().unwrap();
                    at += used;
                }
                out.extend_from_slice(&whole);
                last = p;
            }
            prop_assert_eq!(out, bytes);
            prop_assert_eq!(r.pending(), 0);
        }

        /// Garbage never panics and never leaves more pending than the limit allows.
        #[test]
        fn garbage_is_bounded(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
            let mut r = Reassembly::new(128, check);
            for c in chunks {
                if r.push(&c).is_err() { break; }
                prop_assert!(r.pending() < 128 + 64);
            }
        }
    }

    #[test]
    fn an_undecodable_frame_is_an_error() {
        let mut r = Reassembly::new(1024, check);
        // Kind 9 is neither tuples, acks, end of input nor control.
        let got = r.push(&[0, 0, 0, 0, 9, 0, 0, 0, 0]);
        assert_eq!(got, Err(DecodeError::UnknownKind(9)));
    }
}
