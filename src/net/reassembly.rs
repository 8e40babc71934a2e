//! Reassembly of a TCP byte stream into whole frames: bytes arrive in arbitrary pieces, whole
//! frames leave in buffers (what a worker's receive thread takes), a partial frame waits for the
//! rest. Every frame is checked on the way (its header, and a data frame's payload with the
//! owner's `Check`, which builds nothing), so a frame that is too large or malformed is caught
//! at the connection (which is then closed), never in the worker.
//! Pure: no I/O, so it is proptested.

use super::frame::{self, Check, DecodeError, RawFrame};

/// The bytes of one connection not yet handed on.
#[derive(Debug)]
pub struct Reassembly {
    pending: Vec<u8>,
    /// Largest frame (header included) accepted on this connection.
    limit: usize,
    /// The payload check of data frames.
    check: Check,
}

impl Reassembly {
    /// `limit` bounds one frame, header included (at most `frame::HEADER_LEN + frame::MAX_FRAME`);
    /// `check` checks the payload of each data frame.
    pub fn new(limit: usize, check: Check) -> Reassembly {
        Reassembly {
            pending: Vec::new(),
            limit: limit.min(frame::HEADER_LEN + frame::MAX_FRAME),
            check,
        }
    }

    /// Bytes held that do not yet make a whole frame.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Append bytes read from the stream; return every whole frame now available, in one buffer
    /// (empty when there is none). An error means the stream cannot be trusted: close it.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<u8>, DecodeError> {
        self.reserve_for(bytes.len());
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            let rest = &self.pending[at..];
            if rest.len() >= 4 {
                let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                if len.saturating_add(frame::HEADER_LEN) > self.limit {
                    return Err(DecodeError::TooLarge(len));
                }
            }
            match frame::validate(rest, self.check)? {
                Some(used) => at += used,
                None => break,
            }
        }
        if at == 0 {
            // Still one partial frame: keep it where it is (no copy per read of a large frame).
            return Ok(Vec::new());
        }
        // Only the partial frame at the end is copied; the whole frames move out as they are.
        let mut whole = std::mem::take(&mut self.pending);
        self.pending = whole.split_off(at);
        Ok(whole)
    }

    /// Bytes of memory held for this connection (what the buffer has room for).
    pub(crate) fn capacity(&self) -> usize {
        self.pending.capacity()
    }

    /// Make room for `extra` more bytes: doubling, as a `Vec` grows, but never past the end of
    /// the frame being received (its length is known once its header is in) nor past the limit,
    /// so a peer announcing a large frame costs memory only as its bytes arrive.
    fn reserve_for(&mut self, extra: usize) {
        let need = self.pending.len().saturating_add(extra);
        if need <= self.pending.capacity() {
            return;
        }
        let mut target = need.max(self.pending.capacity().saturating_mul(2));
        if let Some(end) = self.first_frame_end() {
            target = target.min(end.max(need));
        }
        target = target.min(self.limit.max(need));
        self.pending.reserve_exact(target - self.pending.len());
    }

    /// Where the first frame held ends (header included), once its header is in.
    fn first_frame_end(&self) -> Option<usize> {
        let p = self.pending.get(..4)?;
        let len = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as usize;
        Some(len.saturating_add(frame::HEADER_LEN))
    }

    /// Take the first whole frame only, its payload unchecked (handshakes: what follows it stays
    /// pending).
    pub(crate) fn next_frame(&mut self) -> Result<Option<RawFrame>, DecodeError> {
        if self.pending.len() >= 4 {
            let p = &self.pending;
            let len = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as usize;
            if len.saturating_add(frame::HEADER_LEN) > self.limit {
                return Err(DecodeError::TooLarge(len));
            }
        }
        match frame::decode_raw(&self.pending)? {
            Some((f, used)) => {
                self.pending.drain(..used);
                Ok(Some(f))
            }
            None => Ok(None),
        }
    }

    /// Append bytes without looking at them (see `next_frame`).
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// Change the frame limit (after a handshake, from its small limit to the full one).
    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.limit = limit.min(frame::HEADER_LEN + frame::MAX_FRAME);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// These tests send control frames and headers only: no data frame is expected.
    fn no_data(kind: u8, _: &[u8]) -> Result<(), DecodeError> {
        Err(DecodeError::UnknownKind(kind))
    }

    #[test]
    fn memory_grows_with_the_bytes_received_never_past_the_announced_frame() {
        let mut r = Reassembly::new(frame::HEADER_LEN + frame::MAX_FRAME, no_data);
        // A control frame announcing 59 MiB, of which 1 MiB arrives in 64 KiB reads.
        let announced = 59 << 20;
        let mut header = (announced as u32).to_be_bytes().to_vec();
        header.extend_from_slice(&[16, 0, 0, 0, 0]);
        r.push(&header).unwrap();
        let chunk = vec![7u8; 64 << 10];
        for _ in 0..16 {
            assert!(r.push(&chunk).unwrap().is_empty());
        }
        assert!(r.capacity() <= 2 * ((1 << 20) + 9), "{}", r.capacity());
        // Then the rest: the buffer ends exactly at the frame's size, not at a power of two.
        let rest = vec![7u8; announced - (1 << 20)];
        let whole = r.push(&rest).unwrap();
        assert_eq!(whole.len(), announced + frame::HEADER_LEN);
        assert!(whole.capacity() <= announced + frame::HEADER_LEN + (64 << 10));
    }

    #[test]
    fn an_oversized_header_is_refused_before_its_body_arrives() {
        let mut r = Reassembly::new(1024, no_data);
        let got = r.push(&[0, 0, 8, 0, 1]);
        assert_eq!(got, Err(DecodeError::TooLarge(2048)));
    }
}
