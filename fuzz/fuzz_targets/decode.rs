//! Any datagram: `decode` must not panic; what decodes must re-encode (or fail cleanly), and
//! a successful re-encoding must decode to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rasgk::ras::{decode, encode, peek_request_seq_num};

fuzz_target!(|data: &[u8]| {
    let _ = peek_request_seq_num(data);
    let Ok(message) = decode(data) else {
        return;
    };
    let Ok(bytes) = encode(&message) else {
        return;
    };
    let again = match decode(&bytes) {
        Ok(again) => again,
        Err(error) => panic!(
            "re-encoding does not decode: {error:?}\nmessage: {message:?}\nbytes: {bytes:02x?}"
        ),
    };
    assert_eq!(
        message, again,
        "decode(encode(m)) != m; re-encoding: {bytes:02x?}"
    );
});
