//! Known-answer tests: fixed expected bytes for messages rasgk builds, and fixed bytes it
//! must decode. The same messages (`support::messages::all()`) are decoded by Wireshark in
//! `tests/wire_tshark.rs`, so these bytes are pinned by an outside oracle, not only by our
//! own decoder; a few are also derived by hand from X.691 in the comments.

mod support;

use rasgk::ras::{self, reply, Alias, MessageKind, RasMessage};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Encodes to exactly `expected` and decodes back to the same value.
fn round_trip(name: &str, message: &RasMessage, expected: &str) {
    let bytes = ras::encode(message).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(hex(&bytes), expected, "{name}: encoding");
    let back = ras::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(&back, message, "{name}: decoding");
    assert_eq!(
        ras::peek_request_seq_num(&bytes),
        Some(ras::request_seq_num(message)),
        "{name}: seq read from the first octets"
    );
}

const KNOWN: &[(&str, &str)] = &[
    // CHOICE index 0, GRQ preamble, seq 101 = 0x0064 + 1, OID 0.0.8.2250.0.4 = 06 00 08 91 4a 00 04,
    // endpointAlias: dialledDigits "50001" (length 4 in 7 bits, then 4-bit indices into the
    // sorted alphabet #*,0123456789: 5 0 0 0 1 → 8 3 3 3 4), h323-ID "Zoë" (00 5a 00 6f 00 eb).
    ("GRQ", "02a00064060008914a0004007f0100059c410201000072006100730067006b02020083334402005a006f00eb16024001000100"),
    // Ext bit 0 (no extension additions present); gatekeeperIdentifier "rasgk": 7-bit length 4
    // (→ 08) then UCS-2; rasAddress ipAddress 127.0.1.3:1719 (06b7).
    ("GCF", "04800064060008914a0004080072006100730067006b007f00010306b7"),
    ("GRJ", "08800065060008914a0004080072006100730067006b00"),
    // timeToLive 300 as an extension addition: open type 03, then 40 01 2b (2-bit length
    // "2 octets", aligned 300 - 1 = 0x012b).
    ("RRQ", "0ec00066060008914a00048001007f01000506b801007f0100059c41020002020083334402005a006f00eb080072006100730067006b60b500726704726173676b04302e312e30348b1002000340012b01000100010001000100"),
    ("RCF", "12c00066060008914a000401007f01000506b802020083334402005a006f00eb080072006100730067006b0c00650070002d0030003000300031278a0000808110007f00010106b780007f00010206b781007f00010306b782007f00010406b783007f00010506b784007f00010606b785007f00010706b786007f00010806b787007f00010906b788007f00010a06b789007f00010b06b78a007f00010c06b78b007f00010d06b78c007f00010e06b78d007f00010f06b78e007f00011006b78f0340012b01000100"),
    ("RRQ-light", "0e400067060008914a00048001007f01000506b801007f0100059c410201000072006100730067006b60b500726704726173676b04302e312e30348f0002000340012b01800f0c00650070002d0030003000300031010001000100"),
    ("RRJ-duplicate", "14800068060008914a000440010200833340800072006100730067006b"),
    ("RRJ-full", "16800069060008914a0004810100080072006100730067006b0d00130002007f00010106b780007f00010206b78100"),
    ("URQ", "1b40006a01007f01000506b802020083334402005a006f00eb0c00650070002d00300030003000311480000b080072006100730067006b"),
    ("URQ-gk", "1a400fa001007f01000506b80c00650070002d00300030003000311489000b080072006100730067006b01001102007f00010106b780007f00010206b781"),
    // 0 00111 (index 7) 0 (no extensions) 0 (no nonStandardData) = 1c; seq 107 - 1 = 0x006a.
    ("UCF", "1c006a"),
    ("URJ", "20006b00"),
    // destinationInfo "9#0123*45,6": dialledDigits with its 13-character alphabet in 4 bits.
    ("ARQ", "2680006c018000650070002d0030003000300031010500c0345617829002020083334402005a006f00eb40050000071111111111111111111111111111111109602010010011002222222222222222222222222222222201000100"),
    ("ACF", "2a00006c400500007f00020106b82c00c00001000b8001f80100010001000100"),
    ("ARJ", "2c006d00"),
    ("BRQ", "3300006e0c00650070002d00300030003000311111111111111111111111111111111100070802801708001100222222222222222222222222222222220100"),
    ("BCF", "34006e400280"),
    ("DRQ", "3e006f0c00650070002d00300030003000311111111111111111111111111111111100072321001100222222222222222222222222222222220100"),
    ("DCF", "40006f"),
    ("IRR", "5a80007002018000650070002d0030003000300031007f0100059c4101007f01000506b802020083334402005a006f00eb0e2401000180"),
    // 0 11000 (index 24) 1 (extensions) → 62; seq 114; 4 additions (0 000011), bitmap 0001;
    // messageNotUnderstood as an open type: 05, then length 04 and de ad be ef.
    ("XRS", "62007106200504deadbeef"),
    // 0 10101 (index 21) 0 (no extensions) 0 1 (no nonStandardData, replyAddress) → 54 and
    // 1, padded → 80; seq 119 - 1 = 0x0076; callReferenceValue 0000; replyAddress: 0 000
    // (ipAddress) padded → 00, ip 7f000001, port 1719 = 06b7.
    ("IRQ", "548000760000007f00000106b7"),
    // 1 0 000011 (extension addition 3 = index 28) → 83; open type of 3 octets: preamble
    // 0 0000 padded, seq 115 - 1 = 0x0072.
    ("IACK", "8303000072"),
    // 1 0 000100 (index 29) → 84; 4 octets: preamble 0 00000 padded, seq 116 - 1 = 0x0073,
    // nakReason 0 00 (notRegistered) padded.
    ("INAK", "840400007300"),
    // 0 10001 (index 17) 0 (no extensions) 0 (no nonStandardData) → 44; seq 117 - 1 = 0x0074;
    // rejectReason 0 0 (notRegistered) padded.
    ("DRJ", "44007400"),
    // 0 01110 (index 14) 0 0 → 38; seq 118 - 1 = 0x0075; rejectReason 0 000 (notBound), then
    // allowedBandWidth 0 (range 2^32: 2-bit octet count 00 = one octet, padded) and 00.
    ("BRJ", "3800750000"),
];

#[test]
fn every_message_encodes_to_its_known_bytes() {
    let all = support::messages::all();
    assert_eq!(all.len(), KNOWN.len());
    for ((name, _, message), (known_name, expected)) in all.iter().zip(KNOWN) {
        assert_eq!(name, known_name);
        round_trip(name, message, expected);
    }
}

/// XRS with `messageNotUnderstood` of 127 and 128 octets: the open type's length crosses from
/// the one-octet form (< 128) to the two-octet form (10xxxxxx xxxxxxxx).
#[test]
fn length_determinant_edges() {
    for (len, open_type_length, inner_length) in [
        (126usize, "7f", "7e"),
        (127, "8080", "7f"),
        (128, "8082", "8080"),
    ] {
        let data = vec![0xa5; len];
        let message = reply::unknown_message_response(114, &data);
        let expected = format!("6200710620{open_type_length}{inner_length}{}", hex(&data));
        round_trip(&format!("XRS with {len} octets"), &message, &expected);
    }
}

/// h323-ID at its bounds (1 and 256 characters: after the CHOICE bits 01, an octet-aligned
/// length 00 or ff) and dialledDigits at 128 (CHOICE bits 00, 7-bit length 127, then 4-bit
/// indices into the sorted alphabet `#*,0123456789`, so '7' is a; octet-aligned: 3f 80 aa…),
/// inside a GRQ's endpointAlias.
#[test]
fn alias_length_edges() {
    let ras_address = support::messages::addr(support::messages::PHONE_RAS);
    let cases = [
        (Alias::h323_id("A").unwrap(), "40000041".to_string()),
        (
            Alias::h323_id(&"B".repeat(256)).unwrap(),
            format!("40ff{}", "0042".repeat(256)),
        ),
        (
            Alias::dialled_digits(&"7".repeat(128)).unwrap(),
            format!("3f80{}", "aa".repeat(64)),
        ),
    ];
    for (alias, alias_bytes) in cases {
        let message = rasgk::ras::request::gatekeeper_request(
            9,
            ras_address,
            std::slice::from_ref(&alias),
            None,
        );
        let bytes = ras::encode(&message).unwrap();
        let text = hex(&bytes);
        assert!(
            text.contains(&alias_bytes),
            "{alias}: expected {alias_bytes} in {text}"
        );
        assert_eq!(ras::decode(&bytes).unwrap(), message);
    }
}

/// A UCF from a future version with two extension additions rasgk does not know (the 6th
/// and 7th; only the 7th present) decodes, the unknown addition skipped:
/// 1e = 0 00111 (index 7) 1 (extensions present) 0 (no nonStandardData); seq 5 → 00 04;
/// 0 000110 (7 additions) 0000001 (only the 7th) → 0c 04; open type: 01 00.
#[test]
fn unknown_extension_addition_is_skipped() {
    let bytes = unhex("1e00040c040100");
    let message = ras::decode(&bytes).expect("decodes despite the unknown addition");
    assert_eq!(ras::kind(&message), MessageKind::Ucf);
    assert_eq!(ras::request_seq_num(&message), 5);
    assert_eq!(message, reply::unregistration_confirm(5));
}

/// The OBJECT IDENTIFIER of every message rasgk sends: 0.0.8.2250.0.4, with 2250 in two
/// base-128 octets (91 4a) and the first two arcs folded into one octet (0).
#[test]
fn protocol_identifier_is_h225_version_4() {
    let gcf = ras::encode(&reply::gatekeeper_confirm(
        1,
        &support::messages::gk_id(),
        support::messages::addr("127.0.0.1:1719"),
    ))
    .unwrap();
    assert_eq!(&gcf[4..11], &unhex("060008914a0004")[..]);
}

/// A constrained INTEGER newtype as a SEQUENCE extension addition keeps its constraint
/// (the generation-step repair of a rasn 0.30 defect): RCF timeToLive 300 is 03 40 01 2b, not
/// the 03 02 01 2c that rasn gives without the repair; and the same on decode.
#[test]
fn time_to_live_is_constrained_in_its_open_type() {
    let rcf = ras::encode(&support::messages::all()[4].2).unwrap();
    let text = hex(&rcf);
    assert!(text.ends_with("0340012b01000100"), "{text}");
    assert!(!text.contains("0302012c"), "{text}");
}

/// A GRQ from a version-1 endpoint has none of the extension additions, not even those that
/// are mandatory for later versions (`supportsAssignedGK`); it decodes (the second repair).
#[test]
fn absent_mandatory_extension_additions_decode() {
    // 0 00000 (index 0) 0 (no extensions) 0000 (no optional fields) → 00 00; seq 1 → 00 00;
    // OID 0.0.8.2250.0.1; rasAddress 0000 (ipAddress) → 00, 127.0.0.1:1719; endpointType
    // 0 000001 (terminal) 0 0 (mc, undefinedNode), TerminalInfo 0 0 → 02 00.
    let bytes = unhex("00000000060008914a0001007f00000106b70200");
    let message = ras::decode(&bytes).expect("a version-1 GRQ decodes");
    let RasMessage::gatekeeperRequest(grq) = &message else {
        panic!("not a GRQ: {message:?}")
    };
    assert_eq!(grq.supports_assigned_gk, None);
    assert_eq!(ras::request_seq_num(&message), 1);
}

/// The JSON of `rasgk decode --json`: X.697 names, BMPStrings as text.
#[test]
fn json_names_fields_by_their_asn1_identifiers() {
    let gcf = reply::gatekeeper_confirm(
        3,
        &support::messages::gk_id(),
        support::messages::addr("127.0.1.3:1719"),
    );
    let json = ras::to_json(&gcf);
    let body = &json["gatekeeperConfirm"];
    assert_eq!(body["requestSeqNum"], 3);
    assert_eq!(body["gatekeeperIdentifier"], "rasgk");
    assert_eq!(body["protocolIdentifier"], "0.0.8.2250.0.4");
    assert_eq!(body["rasAddress"]["ipAddress"]["port"], 1719);
}
