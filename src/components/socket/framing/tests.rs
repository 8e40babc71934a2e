//! Framing: whatever the chunks the bytes arrive in, the frames are the messages sent; frames
//! past the limit are errors and the stream goes on after them; the end of the stream gives
//! what was left.

use super::*;
use proptest::prelude::*;

fn frames(framing: Framing, max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
    let mut f = Framer::new(framing, max);
    let mut out = Vec::new();
    for c in chunks {
        f.feed(c, &mut out);
    }
    f.finish(&mut out);
    out
}

fn text(s: &str) -> Frame {
    Frame::Text(s.as_bytes().to_vec())
}

#[test]
fn lines_are_cut_at_newlines_and_the_last_unterminated_one_is_kept() {
    let got = frames(Framing::Newline, 100, &[b"a\r\nb", b"c\n\nlast"]);
    assert_eq!(got, vec![text("a"), text("bc"), text(""), text("last")]);
}

#[test]
fn octet_counted_frames_may_hold_newlines() {
    let got = frames(Framing::OctetCounted, 100, &[b"4 a\nb", b"c3 xyz", b"2 ok"]);
    assert_eq!(got, vec![text("a\nbc"), text("xyz"), text("ok")]);
    // A frame cut short by the end of the stream keeps what came.
    let got = frames(Framing::OctetCounted, 100, &[b"10 abc"]);
    assert_eq!(got, vec![text("abc")]);
    // A frame without a length is read as a line.
    let got = frames(Framing::OctetCounted, 100, &[b"<13>hi\n3 abc"]);
    assert_eq!(got, vec![text("<13>hi"), text("abc")]);
}

#[test]
fn frames_past_the_limit_are_errors_and_reading_goes_on() {
    let got = frames(Framing::Newline, 4, &[b"ok\n0123456", b"789\nnext\n"]);
    assert!(matches!(&got[1], Frame::Bad { .. }), "{got:?}");
    assert_eq!(
        (&got[0], &got[2], got.len()),
        (&text("ok"), &text("next"), 3)
    );
    let got = frames(Framing::OctetCounted, 4, &[b"9 01234", b"5678", b"2 ok"]);
    assert!(matches!(&got[0], Frame::Bad { .. }), "{got:?}");
    assert_eq!((&got[1], got.len()), (&text("ok"), 2));
}

/// The bytes of `msgs` framed, cut at the given points.
fn cut_up(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for p in points.into_iter().chain([bytes.len()]) {
        out.push(bytes[from..p].to_vec());
        from = p;
    }
    out
}

proptest! {
    #[test]
    fn newline_frames_whatever_the_chunks(
        msgs in proptest::collection::vec("[^\r\n]{0,30}", 1..20),
        cuts in proptest::collection::vec(0usize..1000, 0..10),
    ) {
        let stream = msgs.join("\n");
        let chunks = cut_up(stream.as_bytes(), &cuts);
        let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let got = frames(Framing::Newline, 200, &chunks);
        let mut want: Vec<Frame> = msgs.iter().map(|m| text(m)).collect();
        if msgs.last().is_some_and(|m| m.is_empty()) {
            want.pop(); // an empty last line after a newline is no frame
        }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn octet_counted_frames_whatever_the_chunks(
        msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 1..20),
        cuts in proptest::collection::vec(0usize..2000, 0..10),
    ) {
        let mut stream = Vec::new();
        for m in &msgs {
            stream.extend_from_slice(format!("{} ", m.len()).as_bytes());
            stream.extend_from_slice(m);
        }
        let chunks = cut_up(&stream, &cuts);
        let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let got = frames(Framing::OctetCounted, 200, &chunks);
        let want: Vec<Frame> = msgs
            .iter()
            .map(|m| Frame::Text(m.strip_suffix(b"\n").unwrap_or(m).to_vec()))
            .collect();
        prop_assert_eq!(got, want);
    }
}
