//! Nimbus's request decoding: the length-prefixed reader and the request JSON: never a panic,
//! and a decoded request encodes back to a message that decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storm::cluster::protocol::rpc::{self, Request};

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = rpc::decode_request(data) {
        let mut buf = Vec::new();
        rpc::write_message(&mut buf, &request).expect("a decoded request encodes");
        let back: Request = rpc::read_message(&mut buf.as_slice()).expect("and decodes");
        assert_eq!(
            serde_json::to_value(&back).ok(),
            serde_json::to_value(&request).ok()
        );
    }
    let _ = rpc::read_message::<Request>(&mut &data[..]);
});
