//! Any TPKT payload: the call-signalling readers must not panic; an `H323-UserInformation`
//! that decodes must re-encode to octets that decode to the same value; a message moved to
//! another call reference must read the same apart from its call reference.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rasgk::q931::{
    encode_user_information, facts, user_information, with_call_reference, CallReference, Message,
    MessageWriter,
};

fuzz_target!(|data: &[u8]| {
    let parsed = Message::parse(data);
    if let Ok(message) = &parsed {
        let _ = (
            message.cause(),
            message.called_party_number(),
            message.display(),
        );
        let _ = message.elements().count();
        if let Ok(information) = user_information(message) {
            let octets = encode_user_information(&information, message.message_type)
                .unwrap_or_else(|e| panic!("a decoded value does not encode: {e}"));
            let mut writer = MessageWriter::new(message.call_reference, message.message_type);
            writer
                .user_user(&octets)
                .unwrap_or_else(|e| panic!("a decoded value does not fit again: {e}"));
            let written = writer.finish();
            let again = Message::parse(&written)
                .and_then(|m| user_information(&m))
                .unwrap_or_else(|e| panic!("re-encoding does not decode: {e}\n{octets:02x?}"));
            assert_eq!(information, again, "decode(encode(u)) != u: {octets:02x?}");
        }
    }
    let read = facts(data);

    let moved_to = CallReference::to_originator(0x1234);
    let Ok(moved) = with_call_reference(data, moved_to) else {
        return;
    };
    match (&parsed, Message::parse(&moved)) {
        (Ok(before), Ok(after)) => {
            assert_eq!(after.call_reference, moved_to);
            assert_eq!(after.message_type, before.message_type);
            let contents = |m: &Message| -> Vec<(u8, Vec<u8>)> {
                m.elements().map(|e| (e.id, e.content.to_vec())).collect()
            };
            assert_eq!(contents(&after), contents(before));
        }
        (Err(_), Err(_)) => {}
        (before, after) => panic!("only one of the two reads: {before:?} / {after:?}"),
    }
    // Errors name octets, which move with the call reference's length; what reads must read
    // the same.
    match (read, facts(&moved)) {
        (Ok((_, before)), Ok((_, after))) => assert_eq!(before, after),
        (Err(_), Err(_)) => {}
        (before, after) => panic!("facts read only once: {before:?} / {after:?}"),
    }
});
