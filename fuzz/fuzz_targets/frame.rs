//! The worker frame codec and stream reassembly: `validate` agrees with `decode`, a decoded
//! frame encodes to bytes that decode and encode to the same bytes again, and reassembly cut
//! at any point hands on whole frames only, holding no more than the limit allows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storm::runtime::wire as frame;
use storm::net::reassembly::Reassembly;

fuzz_target!(|data: &[u8]| {
    let checked = frame::validate(data);
    let decoded = frame::decode(data);
    assert_eq!(checked, decoded.clone().map(|o| o.map(|(_, used)| used)));
    if let Ok(Some((f, used))) = decoded {
        assert!(used <= data.len());
        // Encoding is stable after one decode (maps come back sorted, duplicate keys merged).
        // Compared as bytes: a NaN value is not equal to itself as a `Frame`.
        let mut once = Vec::new();
        frame::encode(&f, &mut once);
        let (again, used_again) = frame::decode(&once)
            .expect("an encoded frame decodes")
            .expect("whole");
        assert_eq!(used_again, once.len());
        let mut twice = Vec::new();
        frame::encode(&again, &mut twice);
        assert_eq!(once, twice);
    }
    // The same bytes fed in pieces whose sizes come from the first byte.
    let step = usize::from(data.first().copied().unwrap_or(1)).max(1);
    let mut r = Reassembly::new(1 << 16, frame::check);
    for piece in data.chunks(step) {
        match r.push(piece) {
            Ok(whole) => {
                let mut at = 0;
                while at < whole.len() {
                    let (_, used) = frame::decode(&whole[at..])
                        .expect("handed-on frames decode")
                        .expect("handed-on frames are whole");
                    at += used;
                }
                assert!(r.pending() <= (1 << 16) + step);
            }
            Err(_) => break,
        }
    }
});
