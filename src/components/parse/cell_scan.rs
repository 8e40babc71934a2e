//! Where the cells of a CSV/TSV line end, found in one pass over the line, 16 bytes at a time:
//! each block's delimiters come out as a bit mask, and a quote or a line end in the block stops
//! the pass (those lines are `quoted.rs`' or csv-core's to read). Searching once per cell was
//! most of the time of reading a CSV line's fields.

/// What stopped a pass before the line's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A `"` in the cell that starts at this byte: the line quotes something.
    Quote(usize),
    /// A `\r` or `\n` inside the line.
    LineEnd,
}

/// Append the (start, end) bounds of each cell of `b`, split at `delimiter` (an ASCII byte
/// other than `"`, `\r` and `\n`), to `bounds`. Stops at the first quote or line end, leaving
/// `bounds` with the cells before the one it stopped in.
pub(crate) fn plain_cells(b: &[u8], delimiter: u8, bounds: &mut Vec<usize>) -> Result<(), Stop> {
    let mut start = 0;
    let mut at = 0;
    #[cfg(target_arch = "x86_64")]
    while at + 16 <= b.len() {
        let (delimiters, stops) = sse2::classify(&b[at..at + 16], delimiter);
        if stops != 0 {
            break;
        }
        let mut mask = delimiters;
        while mask != 0 {
            let end = at + mask.trailing_zeros() as usize;
            bounds.extend([start, end]);
            start = end + 1;
            mask &= mask - 1;
        }
        at += 16;
    }
    for (i, &c) in b.iter().enumerate().skip(at) {
        match c {
            b'"' => return Err(Stop::Quote(start)),
            b'\r' | b'\n' => return Err(Stop::LineEnd),
            _ if c == delimiter => {
                bounds.extend([start, i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    bounds.extend([start, b.len()]);
    Ok(())
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };

    /// Bit masks of the 16 bytes of `block`: which are `delimiter`, and which are a quote,
    /// `\r` or `\n`.
    #[inline]
    pub(super) fn classify(block: &[u8], delimiter: u8) -> (u32, u32) {
        assert!(block.len() >= 16);
        // SAFETY: SSE2 is part of every x86_64 CPU; the load reads the 16 bytes of `block`,
        // which the assert above keeps in bounds, and needs no alignment.
        unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            let delimiters = _mm_movemask_epi8(eq(delimiter)) as u32;
            let stops = _mm_or_si128(_mm_or_si128(eq(b'"'), eq(b'\r')), eq(b'\n'));
            (delimiters, _mm_movemask_epi8(stops) as u32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bounds by one look at each byte: the reference.
    fn reference(b: &[u8], delimiter: u8) -> (Vec<usize>, Result<(), Stop>) {
        let mut bounds = Vec::new();
        let mut start = 0;
        for (i, &c) in b.iter().enumerate() {
            match c {
                b'"' => return (bounds, Err(Stop::Quote(start))),
                b'\r' | b'\n' => return (bounds, Err(Stop::LineEnd)),
                _ if c == delimiter => {
                    bounds.extend([start, i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        bounds.extend([start, b.len()]);
        (bounds, Ok(()))
    }

    fn scan(b: &[u8], delimiter: u8) -> (Vec<usize>, Result<(), Stop>) {
        let mut bounds = Vec::new();
        let stop = plain_cells(b, delimiter, &mut bounds);
        (bounds, stop)
    }

    #[test]
    fn cells_across_blocks_and_the_tail() {
        let line = b"2026-11-02T08:00:00.000Z,info,svc-00,/api/v3/items,201,51.913,9604,x";
        let want = reference(line, b',');
        assert_eq!(scan(line, b','), want);
        assert_eq!((want.0.len() / 2, want.1), (8, Ok(())));
        assert_eq!(scan(b"", b','), (vec![0, 0], Ok(())));
        assert_eq!(scan(b",,", b','), (vec![0, 0, 1, 1, 2, 2], Ok(())));
        assert_eq!(scan(b"a\tb", b'\t'), (vec![0, 1, 2, 3], Ok(())));
    }

    #[test]
    fn a_quote_or_a_line_end_anywhere_stops_the_pass() {
        let mut line = b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,b".to_vec();
        for at in [0, 5, 15, 16, 17, 31, 32, 40, 41] {
            // The quoted cell: the first, or `b` after the comma at 40.
            let cell = if at > 40 { 41 } else { 0 };
            for (c, stop) in [
                (b'"', Stop::Quote(cell)),
                (b'\r', Stop::LineEnd),
                (b'\n', Stop::LineEnd),
            ] {
                let saved = line[at];
                line[at] = c;
                assert_eq!(scan(&line, b',').1, Err(stop), "{c} at {at}");
                line[at] = saved;
            }
        }
    }

    proptest! {
        #[test]
        fn equals_the_reference(
            bytes in proptest::collection::vec(
                prop_oneof![8 => any::<u8>(), 4 => Just(b','), 1 => Just(b'"'), 1 => Just(b'\r')],
                0..100,
            ),
            tab in any::<bool>(),
        ) {
            let delimiter = if tab { b'\t' } else { b',' };
            prop_assert_eq!(scan(&bytes, delimiter), reference(&bytes, delimiter));
        }
    }
}
