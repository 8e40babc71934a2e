//! A task's raw state ([`RawState`]) as one text, for the JSON requests that ship checkpoint
//! parts to nimbus and restored state back to workers: the rows and position laid end to end
//! (lengths as LEB128), then base64.

use super::checkpoint_store::RawState;
use base64::Engine;

fn put_len(n: usize, out: &mut Vec<u8>) {
    let mut n = n as u64;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_bytes(b: &[u8], out: &mut Vec<u8>) {
    put_len(b.len(), out);
    out.extend_from_slice(b);
}

/// `raw` as text.
pub(crate) fn pack(raw: &RawState) -> String {
    let mut out = Vec::new();
    put_len(raw.rows.len(), &mut out);
    for (k, v) in &raw.rows {
        put_bytes(k, &mut out);
        match v {
            Some(v) => {
                out.push(1);
                put_bytes(v, &mut out);
            }
            None => out.push(0),
        }
    }
    match &raw.position {
        Some(p) => {
            out.push(1);
            put_bytes(p, &mut out);
        }
        None => out.push(0),
    }
    base64::engine::general_purpose::STANDARD.encode(out)
}

struct ByteCursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl ByteCursor<'_> {
    fn byte(&mut self) -> anyhow::Result<u8> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| anyhow::anyhow!("packed state ends early"))?;
        self.at += 1;
        Ok(b)
    }

    fn len(&mut self) -> anyhow::Result<usize> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return usize::try_from(n).map_err(|_| anyhow::anyhow!("packed length too big"));
            }
        }
        anyhow::bail!("packed length too long")
    }

    fn bytes(&mut self) -> anyhow::Result<Vec<u8>> {
        let n = self.len()?;
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| anyhow::anyhow!("packed state ends early"))?;
        let out = self.bytes[self.at..end].to_vec();
        self.at = end;
        Ok(out)
    }

    fn optional(&mut self) -> anyhow::Result<Option<Vec<u8>>> {
        match self.byte()? {
            0 => Ok(None),
            1 => Ok(Some(self.bytes()?)),
            other => anyhow::bail!("packed state has a bad flag {other}"),
        }
    }
}

/// The state `text` packs.
pub(crate) fn unpack(text: &str) -> anyhow::Result<RawState> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| anyhow::anyhow!("packed state is not base64: {e}"))?;
    let mut r = ByteCursor {
        bytes: &bytes,
        at: 0,
    };
    let n = r.len()?;
    let mut rows = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let k = r.bytes()?;
        rows.push((k, r.optional()?));
    }
    let position = r.optional()?;
    anyhow::ensure!(r.at == bytes.len(), "packed state has bytes after its end");
    Ok(RawState { rows, position })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn unpack_gives_back_what_pack_took(
            rows in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..40), proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300))), 0..20),
            position in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..50)),
        ) {
            let raw = RawState { rows, position };
            prop_assert_eq!(unpack(&pack(&raw)).ok(), Some(raw));
        }
    }

    #[test]
    fn damaged_text_is_an_error_not_a_panic() {
        let text = pack(&RawState {
            rows: vec![(vec![1, 2], Some(vec![3; 200]))],
            position: None,
        });
        assert!(unpack(&text[..text.len() / 2]).is_err());
        assert!(unpack("!!").is_err());
        assert!(unpack("").is_err());
    }
}
