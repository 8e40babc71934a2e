//! Short strings (the words of a word count) made into `CompactString`s in registers.
//!
//! `CompactString::new` copies a short string into a stack buffer with `memcpy` and reads the
//! buffer back as whole 8- or 16-byte words at once. Those loads cannot be forwarded from the
//! byte-sized stores `memcpy` has just made, so they wait for the stores to reach the cache (a
//! store-forwarding stall). In the word count that wait was the most expensive instruction of
//! `split` (`perf annotate`). Here the 24 bytes of the inline form are put together in registers
//! from loads of the source and become the string as they are, with no trip through memory.
//!
//! The inline form (the bytes, zeros, and `0xC0 | len` in the last byte) is compact_str's. The
//! fast path is taken only after `layout_matches` has seen `CompactString::new` build exactly
//! this form, so a compact_str that ever changed it would make words the slow way, not wrong.

use compact_str::CompactString;
use std::sync::OnceLock;

/// Bytes in a `CompactString` (and the longest inline string, less one).
const SIZE: usize = 24;

/// `CompactString::new(text)`, without the stall for strings shorter than 24 bytes.
#[inline(always)]
pub(crate) fn word(text: &str) -> CompactString {
    if text.len() < SIZE && layout_matches() {
        let form = inline_form(text.as_bytes());
        // SAFETY: `layout_matches` checked that `CompactString` is 24 bytes and that
        // `CompactString::new` builds exactly `inline_form`'s words for short strings, so `form`
        // is the value `CompactString::new(text)` would return; `text` is valid UTF-8.
        return unsafe { std::mem::transmute::<[u64; 3], CompactString>(form) };
    }
    CompactString::new(text)
}

/// The three machine words of the inline form of `bytes` (shorter than 24 bytes).
#[inline(always)]
fn inline_form(bytes: &[u8]) -> [u64; 3] {
    let len = bytes.len() as u64;
    [
        chunk(bytes, 0),
        chunk(bytes, 8),
        chunk(bytes, 16) | ((0xC0 | len) << 56),
    ]
}

/// Bytes `at..at + 8` of `bytes` (fewer at the end, zero-filled) as a little-endian word, read
/// with at most two overlapping loads.
#[inline(always)]
fn chunk(bytes: &[u8], at: usize) -> u64 {
    let rest = bytes.get(at..).unwrap_or_default();
    match rest.len() {
        0 => 0,
        n @ 1..=3 => {
            let (first, mid, last) = (rest[0], rest[n / 2], rest[n - 1]);
            u64::from(first) | u64::from(mid) << (n / 2 * 8) | u64::from(last) << ((n - 1) * 8)
        }
        n @ 4..=7 => u64::from(le_u32(rest)) | u64::from(le_u32(&rest[n - 4..])) << ((n - 4) * 8),
        _ => u64::from_le_bytes([
            rest[0], rest[1], rest[2], rest[3], rest[4], rest[5], rest[6], rest[7],
        ]),
    }
}

#[inline(always)]
fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Whether `CompactString::new` builds `inline_form` for short strings (checked once).
fn layout_matches() -> bool {
    static MATCHES: OnceLock<bool> = OnceLock::new();
    *MATCHES.get_or_init(|| {
        cfg!(all(target_endian = "little", target_pointer_width = "64"))
            && std::mem::size_of::<CompactString>() == SIZE
            && [
                "",
                "a",
                "abc",
                "abcdefgh",
                "Grüße, ναι",
                "abcdefghijklmnopqrstuvw",
            ]
            .iter()
            .all(|t| {
                let made = CompactString::new(t);
                // SAFETY: `CompactString` is 24 bytes (checked above), and an inline one is
                // 24 initialised bytes, so it can be read as three words.
                let words = unsafe { std::mem::transmute_copy::<CompactString, [u64; 3]>(&made) };
                words == inline_form(t.as_bytes())
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_fast_path_is_taken_on_this_compact_str() {
        assert!(layout_matches());
    }

    #[test]
    fn every_length_matches_compact_str() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        for n in 0..=text.len() {
            let w = word(&text[..n]);
            assert_eq!(w, CompactString::new(&text[..n]), "length {n}");
            assert_eq!(w.len(), n);
            assert_eq!(w.is_heap_allocated(), n > SIZE);
        }
    }

    proptest! {
        #[test]
        fn any_string_matches_compact_str(s in "\\PC{0,30}") {
            let w = word(&s);
            prop_assert_eq!(w.as_str(), s.as_str());
            prop_assert_eq!(w, CompactString::new(&s));
        }
    }
}
