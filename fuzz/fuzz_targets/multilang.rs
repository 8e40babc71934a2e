//! The multilang protocol: framing a child's output into messages (any cut of the bytes) and
//! parsing each message: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storm::components::shell::protocol::{self, Framed, Framer};

fuzz_target!(|data: &[u8]| {
    let step = usize::from(data.first().copied().unwrap_or(1)).max(1);
    let mut framer = Framer::default();
    let mut pieces = data.chunks(step).peekable();
    loop {
        let eof = pieces.peek().is_none();
        while let Some(framed) = framer.next_message(eof) {
            if let Framed::Message(text) = framed {
                let _ = protocol::parse(text);
            }
        }
        let Some(piece) = pieces.next() else {
            break;
        };
        let spare = framer.spare();
        let n = piece.len().min(spare.len());
        spare[..n].copy_from_slice(&piece[..n]);
        framer.filled(n);
    }
});
