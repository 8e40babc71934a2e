//! Frames: the unit the transport moves, and all it knows of what it moves. A frame is a fixed
//! big-endian header — payload length (u32), kind (u8), destination (u32) — then a payload.
//! Kinds below [`FIRST_CONTROL`] are data frames: their payload belongs to the runtime, which
//! encodes it and hands the network a [`Check`] for it, so a malformed frame is refused at the
//! connection, never in a worker. Kinds from [`FIRST_CONTROL`] up are control frames (the
//! handshake's), whose payload is opaque bytes. Pure, no I/O.
//!
//! Splitting never panics and never trusts a length beyond the bytes it was given.

pub(crate) const HEADER_LEN: usize = 9;
/// Frames larger than this are refused (the connection is dropped, not the worker).
pub(crate) const MAX_FRAME: usize = 64 << 20;
/// The first kind of control frame; kinds below it carry data.
pub(crate) const FIRST_CONTROL: u8 = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("frame of {0} bytes is over the limit of {MAX_FRAME}")]
    TooLarge(usize),
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    #[error("malformed frame payload: {0}")]
    Malformed(&'static str),
}

/// Checks the payload of a data frame of a kind without building anything from it: what the
/// owner of data frames gives the network so it can refuse bad frames cheaply.
pub(crate) type Check = fn(kind: u8, body: &[u8]) -> Result<(), DecodeError>;

/// One frame at the front of a buffer, its payload still in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split<'a> {
    pub(crate) kind: u8,
    pub(crate) dest: u32,
    pub(crate) body: &'a [u8],
    /// Bytes the frame takes, header included.
    pub(crate) used: usize,
}

/// A frame of any kind with its payload copied out (handshakes, tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawFrame {
    pub(crate) kind: u8,
    pub(crate) dest: u32,
    pub(crate) body: Vec<u8>,
}

/// Start a frame at the end of `out`: room for its header, filled in by [`end`]. Returns where
/// the frame starts.
#[inline]
pub(crate) fn begin(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    start
}

/// End the frame begun at `start`: its payload is everything appended since.
#[inline]
pub(crate) fn end(out: &mut [u8], start: usize, kind: u8, dest: u32) {
    let len = (out.len() - start - HEADER_LEN) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    out[start + 4] = kind;
    out[start + 5..start + 9].copy_from_slice(&dest.to_be_bytes());
}

/// The frame at the front of `buf`, by its header alone. `Ok(None)` means more bytes are needed.
#[inline]
pub(crate) fn split(buf: &[u8]) -> Result<Option<Split<'_>>, DecodeError> {
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
    Ok(Some(Split {
        kind: buf[4],
        dest: u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]),
        body: &buf[HEADER_LEN..HEADER_LEN + len],
        used: HEADER_LEN + len,
    }))
}

/// Check the frame at the front of `buf`: its header, and a data frame's payload with `check`.
/// `Ok(None)` means more bytes are needed; otherwise the bytes the frame takes.
pub(crate) fn validate(buf: &[u8], check: Check) -> Result<Option<usize>, DecodeError> {
    let Some(f) = split(buf)? else {
        return Ok(None);
    };
    if f.kind < FIRST_CONTROL {
        check(f.kind, f.body)?;
    }
    Ok(Some(f.used))
}

/// Append one frame of any kind to `out`.
pub(crate) fn encode_raw(frame: &RawFrame, out: &mut Vec<u8>) {
    let start = begin(out);
    out.extend_from_slice(&frame.body);
    end(out, start, frame.kind, frame.dest);
}

/// The frame at the front of `buf`, its payload copied out and not looked at.
pub(crate) fn decode_raw(buf: &[u8]) -> Result<Option<(RawFrame, usize)>, DecodeError> {
    Ok(split(buf)?.map(|f| {
        let frame = RawFrame {
            kind: f.kind,
            dest: f.dest,
            body: f.body.to_vec(),
        };
        (frame, f.used)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn raw() -> impl Strategy<Value = RawFrame> {
        (
            any::<u8>(),
            any::<u32>(),
            proptest::collection::vec(any::<u8>(), 0..40),
        )
            .prop_map(|(kind, dest, body)| RawFrame { kind, dest, body })
    }

    proptest! {
        #[test]
        fn raw_frames_round_trip(frames in proptest::collection::vec(raw(), 1..4)) {
            let mut buf = Vec::new();
            for f in &frames { encode_raw(f, &mut buf); }
            let mut at = 0;
            for f in &frames {
                let (got, used) = decode_raw(&buf[at..]).unwrap().unwrap();
                prop_assert_eq!(&got, f);
                at += used;
            }
            prop_assert_eq!(at, buf.len());
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_raw(&bytes);
        }
    }

    #[test]
    fn only_data_frames_are_checked() {
        fn refuse(kind: u8, _: &[u8]) -> Result<(), DecodeError> {
            Err(DecodeError::UnknownKind(kind))
        }
        let mut buf = Vec::new();
        encode_raw(
            &RawFrame {
                kind: FIRST_CONTROL,
                dest: 0,
                body: vec![1, 2],
            },
            &mut buf,
        );
        assert_eq!(validate(&buf, refuse), Ok(Some(HEADER_LEN + 2)));
        buf.clear();
        encode_raw(
            &RawFrame {
                kind: 2,
                dest: 0,
                body: vec![1, 2],
            },
            &mut buf,
        );
        assert_eq!(validate(&buf, refuse), Err(DecodeError::UnknownKind(2)));
    }
}
