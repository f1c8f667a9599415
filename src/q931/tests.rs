//! Unit and property tests of the codec: hand-written octets read, every builder read back,
//! every reading error located, and no panic on any input.

use proptest::prelude::*;

use super::*;
use crate::ras::asn::{self, H323UUPDUH323MessageBody as Body};
use crate::ras::reply::EndpointId;
use crate::ras::Alias;

const CALL_ID: [u8; 16] = *b"call-identifier!";
const CONFERENCE_ID: [u8; 16] = *b"conference-id-16";

/// A Release Complete written out by hand from Q.931 and H.225.0: call reference 42 with the
/// flag set, Cause 16 (normal call clearing; ITU-T coding, private network serving the local
/// user), and a User-user element whose PER is a `releaseComplete` with protocolIdentifier
/// 0.0.8.2250.0.4 and reason `undefinedReason`, without extension additions.
const RELEASE_COMPLETE: [u8; 23] = [
    0x08, // protocol discriminator Q.931
    0x02, 0x80, 0x2a, // call reference: 2 octets, flag 1, value 42
    0x5a, // Release Complete
    0x08, 0x02, 0x81, 0x90, // Cause: ITU-T, location 1; cause 16
    0x7e, 0x00, 0x0b, 0x05, // User-user: length 11, X.208/X.209 coded
    // H323-UserInformation: no extensions, no user-data; H323-UU-PDU: no extensions, no
    // nonStandardData; body: root alternative 5 (releaseComplete) = 0000 0101.
    0x05, //
    // ReleaseComplete-UUIE: no extensions, reason present; aligned.
    0x40, //
    0x06, 0x00, 0x08, 0x91, 0x4a, 0x00, 0x04, // OID 0.0.8.2250.0.4
    0x58, // reason: root alternative 11 (undefinedReason) = 0 1011, padded
];

/// A Setup's Q.931 part written out by hand: call reference 1 (flag 0), Bearer capability
/// speech, Display "Bob", Called party number 5001 (unknown type, ISDN plan), Sending
/// complete (single octet), no User-user element.
const SETUP_Q931: [u8; 26] = [
    0x08, 0x02, 0x00, 0x01, 0x05, // header: call reference 1, Setup
    0x04, 0x03, 0x80, 0x90, 0xa5, // Bearer capability
    0x28, 0x03, b'B', b'o', b'b', // Display
    0x70, 0x05, 0x81, b'5', b'0', b'0', b'1', // Called party number
    0xa1, // Sending complete
    0x6c, 0x01, 0x81, // Calling party number: no digits
];

#[test]
fn a_hand_written_release_complete_reads_field_by_field() {
    let message = Message::parse(&RELEASE_COMPLETE).unwrap();
    assert_eq!(message.call_reference, CallReference::to_originator(42));
    assert_eq!(message.call_reference_length, 2);
    assert_eq!(message.message_type, MessageType::ReleaseComplete);
    assert_eq!(message.cause(), Some(16));
    assert_eq!(message.ie(ie::CAUSE), Some(&[0x81, 0x90][..]));
    assert_eq!(message.user_user(), Some(&RELEASE_COMPLETE[13..]));
    let ids: Vec<(u8, usize)> = message.elements().map(|e| (e.id, e.at)).collect();
    assert_eq!(ids, [(ie::CAUSE, 5), (ie::USER_USER, 9)]);

    let (_, facts) = facts(&RELEASE_COMPLETE).unwrap();
    assert_eq!(facts.body, BodyKind::ReleaseComplete);
    assert_eq!(facts.release_reason, Some("undefinedReason"));
    assert_eq!(facts.call_identifier, None);
    assert_eq!(facts.h245_tunnelling, None);
}

#[test]
fn rasn_writes_the_hand_written_per_octets() {
    // The builder's own value, less what the hand-written octets leave out.
    let built = release_complete(CallReference::default(), None, Release::NoAnswer);
    let mut information = user_information(&Message::parse(&built).unwrap()).unwrap();
    let Body::releaseComplete(uuie) = &mut information.h323_uu_pdu.h323_message_body else {
        panic!("not a releaseComplete");
    };
    assert_eq!(
        uuie.reason,
        Some(asn::ReleaseCompleteReason::undefinedReason(()))
    );
    uuie.call_identifier = None;
    information.h323_uu_pdu.h245_tunnelling = None;
    let per = encode_user_information(&information, MessageType::ReleaseComplete).unwrap();
    assert_eq!(per, RELEASE_COMPLETE[13..]);
}

#[test]
fn a_hand_written_setup_gives_digits_display_and_single_octet_elements() {
    let message = Message::parse(&SETUP_Q931).unwrap();
    assert_eq!(message.call_reference, CallReference::from_originator(1));
    assert_eq!(message.message_type, MessageType::Setup);
    assert_eq!(message.called_party_number().as_deref(), Some("5001"));
    assert_eq!(message.display().as_deref(), Some("Bob"));
    assert_eq!(message.ie(ie::BEARER_CAPABILITY), Some(&SPEECH_BEARER[..]));
    assert_eq!(message.ie(0xa1), Some(&[][..]));
    assert_eq!(message.ie(ie::CALLING_PARTY_NUMBER), Some(&[0x81][..]));
    assert_eq!(message.cause(), None);
    assert_eq!(message.user_user(), None);
    assert_eq!(
        facts(&SETUP_Q931).unwrap_err(),
        Q931Error::NoUserUser(MessageType::Setup)
    );
}

#[test]
fn called_party_number_skips_octet_3a_and_cause_skips_3a() {
    // Called party number whose octet 3 has bit 8 clear, so an octet 3a follows.
    let number = [
        0x08, 0x02, 0x00, 0x01, 0x05, 0x70, 0x04, 0x01, 0x80, b'4', b'2',
    ];
    assert_eq!(
        Message::parse(&number)
            .unwrap()
            .called_party_number()
            .as_deref(),
        Some("42")
    );
    // Cause with octet 3a (recommendation), then cause 17 (user busy).
    let cause = [0x08, 0x02, 0x00, 0x01, 0x5a, 0x08, 0x03, 0x01, 0x80, 0x91];
    assert_eq!(Message::parse(&cause).unwrap().cause(), Some(17));
    // A Cause too short to hold a value, a number without an end of octet 3.
    let short = [
        0x08, 0x02, 0x00, 0x01, 0x5a, 0x08, 0x01, 0x81, 0x70, 0x01, 0x01,
    ];
    let message = Message::parse(&short).unwrap();
    assert_eq!(message.cause(), None);
    assert_eq!(message.called_party_number(), None);
}

#[test]
fn one_and_zero_octet_call_references() {
    let one = Message::parse(&[0x08, 0x01, 0x85, 0x5a]).unwrap();
    assert_eq!(one.call_reference, CallReference::to_originator(5));
    assert_eq!(one.call_reference_length, 1);
    let one = Message::parse(&[0x08, 0x01, 0x7f, 0x05]).unwrap();
    assert_eq!(one.call_reference, CallReference::from_originator(0x7f));
    let zero = Message::parse(&[0x08, 0x00, 0x62]).unwrap();
    assert_eq!(zero.call_reference, CallReference::default());
    assert_eq!(zero.call_reference_length, 0);
    assert_eq!(zero.message_type, MessageType::Facility);
    assert_eq!(zero.elements().count(), 0);
}

#[test]
fn the_flag_is_bit_8_of_the_first_octet_only() {
    let message = Message::parse(&[0x08, 0x02, 0xff, 0xff, 0x01]).unwrap();
    assert_eq!(message.call_reference, CallReference::to_originator(0x7fff));
    let message = Message::parse(&[0x08, 0x02, 0x7f, 0xff, 0x01]).unwrap();
    assert_eq!(
        message.call_reference,
        CallReference::from_originator(0x7fff)
    );
    assert_eq!(CallReference::to_originator(0x7fff).octets(), [0xff, 0xff]);
    assert_eq!(
        CallReference::from_originator(0x0102).octets(),
        [0x01, 0x02]
    );
    assert_eq!(
        CallReference::from_originator(9).reversed(),
        CallReference::to_originator(9)
    );
}

#[test]
fn with_call_reference_rewrites_only_the_call_reference() {
    let crv = CallReference::from_originator(0x1234);
    let relayed = with_call_reference(&RELEASE_COMPLETE, crv).unwrap();
    assert_eq!(&relayed[..2], &[0x08, 0x02]);
    assert_eq!(&relayed[2..4], &[0x12, 0x34]);
    assert_eq!(&relayed[4..], &RELEASE_COMPLETE[4..]);
    let back = with_call_reference(&relayed, CallReference::to_originator(42)).unwrap();
    assert_eq!(&back[..], &RELEASE_COMPLETE[..]);

    // Shorter call references grow to 2 octets; the rest follows unchanged.
    let one = [0x08, 0x01, 0x85, 0x5a, 0x08, 0x02, 0x81, 0x90];
    let relayed = with_call_reference(&one, CallReference::to_originator(0x0300)).unwrap();
    assert_eq!(
        &relayed[..],
        &[0x08, 0x02, 0x83, 0x00, 0x5a, 0x08, 0x02, 0x81, 0x90]
    );
    let message = Message::parse(&relayed).unwrap();
    assert_eq!(message.call_reference, CallReference::to_originator(0x0300));
    assert_eq!(message.cause(), Some(16));
    let zero = with_call_reference(&[0x08, 0x00, 0x62], crv).unwrap();
    assert_eq!(&zero[..], &[0x08, 0x02, 0x12, 0x34, 0x62]);

    assert_eq!(
        with_call_reference(&RELEASE_COMPLETE, CallReference::from_originator(0x8000)),
        Err(Q931Error::CallReferenceValue(0x8000))
    );
    assert_eq!(
        with_call_reference(&[0x08, 0x03, 0, 0, 0, 0x05], crv),
        Err(Q931Error::CallReferenceLength(3))
    );
}

#[test]
fn header_errors_say_what_is_missing_and_where() {
    use Q931Error::*;
    let cases: [(&[u8], Q931Error); 7] = [
        (
            &[],
            Truncated {
                what: "protocol discriminator",
                at: 0,
                len: 0,
            },
        ),
        (&[0x09, 0x02], ProtocolDiscriminator(0x09)),
        (
            &[0x08],
            Truncated {
                what: "call reference length",
                at: 1,
                len: 1,
            },
        ),
        (&[0x08, 0x03, 0, 0, 0, 0x05], CallReferenceLength(3)),
        (
            &[0x08, 0x02, 0x00],
            Truncated {
                what: "call reference value",
                at: 3,
                len: 3,
            },
        ),
        (
            &[0x08, 0x02, 0x00, 0x01],
            Truncated {
                what: "message type",
                at: 4,
                len: 4,
            },
        ),
        (
            &[0x08, 0x00],
            Truncated {
                what: "message type",
                at: 2,
                len: 2,
            },
        ),
    ];
    for (octets, error) in cases {
        assert_eq!(Message::parse(octets), Err(error.clone()), "{octets:02x?}");
        assert_eq!(facts(octets).unwrap_err(), error, "{octets:02x?}");
    }
    assert_eq!(
        Q931Error::CallReferenceLength(3).to_string(),
        "call reference length 3 at octet 1: H.225.0 uses 2 octets, and no more than 2 are \
         accepted"
    );
}

#[test]
fn element_errors_name_the_element_and_its_octet() {
    let setup = MessageType::Setup;
    // Display says 5 octets, 2 are there.
    let short = [0x08, 0x02, 0x00, 0x01, 0x05, 0xa1, 0x28, 0x05, b'B', b'o'];
    let error = Message::parse(&short).unwrap_err();
    assert_eq!(
        error,
        Q931Error::ElementTruncated {
            message_type: setup,
            id: ie::DISPLAY,
            at: 6,
            needed: 7,
            available: 4,
        }
    );
    assert_eq!(
        error.to_string(),
        "information element 0x28 at octet 6 of Setup needs 7 octets (identifier, length and \
         content) but only 4 are left"
    );
    // No room for the length octet(s).
    let no_length = [0x08, 0x02, 0x00, 0x01, 0x05, 0x04];
    assert!(matches!(
        Message::parse(&no_length),
        Err(Q931Error::ElementTruncated {
            id: 0x04,
            at: 5,
            needed: 2,
            ..
        })
    ));
    let no_uu_length = [0x08, 0x02, 0x00, 0x01, 0x05, 0x7e, 0x00];
    assert!(matches!(
        Message::parse(&no_uu_length),
        Err(Q931Error::ElementTruncated {
            id: ie::USER_USER,
            needed: 3,
            ..
        })
    ));
    let empty_uu = [0x08, 0x02, 0x00, 0x01, 0x05, 0x7e, 0x00, 0x00];
    assert_eq!(
        Message::parse(&empty_uu),
        Err(Q931Error::UserUserEmpty {
            message_type: setup,
            at: 5
        })
    );
}

#[test]
fn user_information_errors_say_what_and_where() {
    // User-user with another protocol discriminator (IA5 characters, 0x04).
    let ia5 = [0x08, 0x02, 0x00, 0x01, 0x5a, 0x7e, 0x00, 0x02, 0x04, b'x'];
    assert_eq!(
        facts(&ia5).unwrap_err(),
        Q931Error::UserUserProtocol {
            message_type: MessageType::ReleaseComplete,
            at: 5,
            discriminator: 0x04
        }
    );
    assert_eq!(Message::parse(&ia5).unwrap().user_user(), None);

    // The PER cut short.
    let mut cut = RELEASE_COMPLETE[..20].to_vec();
    cut[11] = 8; // the User-user length, to match
    match facts(&cut).unwrap_err() {
        Q931Error::UserInformation {
            message_type: MessageType::ReleaseComplete,
            at: 13,
            len: 7,
            truncated: true,
            ..
        } => {}
        other => panic!("{other:?}"),
    }
    // An octet after the value.
    let mut long = RELEASE_COMPLETE.to_vec();
    long[11] += 1;
    long.push(0);
    assert_eq!(
        facts(&long).unwrap_err(),
        Q931Error::TrailingData {
            message_type: MessageType::ReleaseComplete,
            at: 13,
            used: 10,
            len: 11
        }
    );
}

#[test]
fn message_types_have_their_codes_and_names() {
    for named in MessageType::NAMED {
        assert_eq!(MessageType::from_code(named.code()), named);
        assert_ne!(named.name(), MessageType::Other(0).name());
    }
    assert_eq!(MessageType::ReleaseComplete.code(), 0x5a);
    assert_eq!(MessageType::ReleaseComplete.name(), "Release Complete");
    assert_eq!(MessageType::from_code(0x45), MessageType::Other(0x45));
    assert_eq!(MessageType::Other(0x45).code(), 0x45);
    assert_eq!(MessageType::Other(0x45).to_string(), "message type 0x45");
    assert_eq!(MessageType::StatusEnquiry.to_string(), "Status Enquiry");
}

#[test]
fn release_complete_carries_cause_reason_and_call_identifier() {
    for release in Release::ALL {
        let crv = CallReference::to_originator(0x1234);
        let octets = release_complete(crv, Some(CALL_ID), release);
        let (message, facts) = facts(&octets).unwrap();
        assert_eq!(message.call_reference, crv, "{release:?}");
        assert_eq!(message.message_type, MessageType::ReleaseComplete);
        assert_eq!(message.cause(), Some(release.cause()), "{release:?}");
        assert_eq!(message.ie(ie::CAUSE).unwrap()[0], 0x81, "ITU-T, location 1");
        assert_eq!(facts.body, BodyKind::ReleaseComplete);
        assert_eq!(facts.call_identifier, Some(CALL_ID));
        assert_eq!(facts.h245_tunnelling, Some(false));
        assert_eq!(
            facts.release_reason,
            release.reason().as_ref().map(release_reason_name),
            "{release:?}"
        );
    }
    let (_, facts) = facts(&release_complete(
        CallReference::from_originator(1),
        None,
        Release::CalledPartyNotRegistered,
    ))
    .unwrap();
    assert_eq!(facts.call_identifier, Some([0; 16]));
    assert_eq!(facts.release_reason, Some("calledPartyNotRegistered"));
    assert_eq!(Release::NormalClearing.reason(), None);
    assert_eq!(Release::CalledPartyNotRegistered.cause(), 20);
}

fn caller() -> Vec<Alias> {
    vec![
        Alias::dialled_digits("50001").unwrap(),
        Alias::h323_id("Zoë").unwrap(),
    ]
}

fn callee() -> Vec<Alias> {
    vec![
        Alias::h323_id("Bob").unwrap(),
        Alias::dialled_digits("50002").unwrap(),
    ]
}

#[test]
fn setup_carries_bearer_digits_display_and_the_setup_uuie() {
    let endpoint = EndpointId::new("ep-0001").unwrap();
    let (source, destination) = (caller(), callee());
    let octets = setup(&Setup {
        call_reference: CallReference::from_originator(77),
        call_identifier: CALL_ID,
        conference_id: CONFERENCE_ID,
        source: &source,
        destination: &destination,
        display: Some("Zoe"),
        endpoint_identifier: Some(&endpoint),
    })
    .unwrap();
    let (message, facts) = facts(&octets).unwrap();
    assert_eq!(message.call_reference, CallReference::from_originator(77));
    assert_eq!(message.message_type, MessageType::Setup);
    assert_eq!(&octets[5..10], &[0x04, 0x03, 0x80, 0x90, 0xa5]);
    assert_eq!(message.display().as_deref(), Some("Zoe"));
    assert_eq!(message.called_party_number().as_deref(), Some("50002"));
    assert_eq!(message.ie(ie::CALLED_PARTY_NUMBER).unwrap()[0], 0x81);
    let ids: Vec<u8> = message.elements().map(|e| e.id).collect();
    assert_eq!(ids, [0x04, 0x28, 0x70, 0x7e], "ascending identifiers");
    assert_eq!(
        facts,
        Facts {
            body: BodyKind::Setup,
            call_identifier: Some(CALL_ID),
            conference_id: Some(CONFERENCE_ID),
            endpoint_identifier: Some("ep-0001".to_string()),
            source_aliases: source,
            destination_aliases: destination,
            h245_address: None,
            h245_tunnelling: Some(true),
            release_reason: None,
        }
    );
    let information = user_information(&message).unwrap();
    let Body::setup(uuie) = information.h323_uu_pdu.h323_message_body else {
        panic!("not a setup");
    };
    assert_eq!(uuie.source_info, crate::ras::request::terminal());
    assert_eq!(
        uuie.conference_goal,
        asn::SetupUUIEConferenceGoal::create(())
    );
    assert_eq!(uuie.call_type, asn::CallType::pointToPoint(()));
    assert!(!uuie.active_mc);
    for (name, value) in [
        ("mediaWaitForConnect", uuie.media_wait_for_connect),
        ("canOverlapSend", uuie.can_overlap_send),
        ("multipleCalls", uuie.multiple_calls),
        ("maintainConnection", uuie.maintain_connection),
    ] {
        assert_eq!(value, Some(false), "{name}");
    }
}

#[test]
fn setup_without_options_has_no_display_nor_number() {
    let destination = [Alias::h323_id("Bob").unwrap()];
    let octets = setup(&Setup {
        call_reference: CallReference::from_originator(1),
        call_identifier: CALL_ID,
        conference_id: CONFERENCE_ID,
        source: &[],
        destination: &destination,
        display: None,
        endpoint_identifier: None,
    })
    .unwrap();
    let (message, facts) = facts(&octets).unwrap();
    let ids: Vec<u8> = message.elements().map(|e| e.id).collect();
    assert_eq!(ids, [ie::BEARER_CAPABILITY, ie::USER_USER]);
    assert!(facts.source_aliases.is_empty());
    assert_eq!(facts.endpoint_identifier, None);
}

#[test]
fn setup_refuses_what_its_fields_cannot_hold() {
    let base = Setup {
        call_reference: CallReference::from_originator(1),
        call_identifier: CALL_ID,
        conference_id: CONFERENCE_ID,
        source: &[],
        destination: &[],
        display: Some("Zoë"),
        endpoint_identifier: None,
    };
    assert!(matches!(
        setup(&base),
        Err(Q931Error::Value {
            what: "Display",
            ..
        })
    ));
    let long = "x".repeat(81);
    assert!(setup(&Setup {
        display: Some(&long),
        ..base
    })
    .is_err());
    assert!(setup(&Setup {
        display: Some(&long[..80]),
        ..base
    })
    .is_ok());
    let bad = [Alias::DialledDigits("12a".into())];
    assert!(matches!(
        setup(&Setup {
            display: None,
            destination: &bad,
            ..base
        }),
        Err(Q931Error::Alias {
            what: "destinationAddress",
            ..
        })
    ));
}

#[test]
fn call_proceeding_alerting_and_connect_read_back() {
    let crv = CallReference::to_originator(0x7fff);
    for (octets, message_type, body) in [
        (
            call_proceeding(crv, CALL_ID),
            MessageType::CallProceeding,
            BodyKind::CallProceeding,
        ),
        (
            alerting(crv, CALL_ID),
            MessageType::Alerting,
            BodyKind::Alerting,
        ),
        (
            connect(crv, CALL_ID, CONFERENCE_ID),
            MessageType::Connect,
            BodyKind::Connect,
        ),
    ] {
        let (message, facts) = facts(&octets).unwrap();
        assert_eq!(message.call_reference, crv);
        assert_eq!(message.message_type, message_type);
        assert_eq!(facts.body, body);
        assert_eq!(facts.call_identifier, Some(CALL_ID));
        assert_eq!(facts.h245_tunnelling, Some(true));
        assert_eq!(
            facts.conference_id,
            (body == BodyKind::Connect).then_some(CONFERENCE_ID)
        );
        let information = user_information(&message).unwrap();
        let (multiple, maintain, destination) = match information.h323_uu_pdu.h323_message_body {
            Body::callProceeding(m) => {
                (m.multiple_calls, m.maintain_connection, m.destination_info)
            }
            Body::alerting(m) => (m.multiple_calls, m.maintain_connection, m.destination_info),
            Body::connect(m) => (m.multiple_calls, m.maintain_connection, m.destination_info),
            other => panic!("{other:?}"),
        };
        assert_eq!((multiple, maintain), (Some(false), Some(false)));
        assert_eq!(destination, crate::ras::request::terminal());
    }
}

#[test]
fn a_relayed_setup_keeps_its_facts() {
    let (source, destination) = (caller(), callee());
    let octets = setup(&Setup {
        call_reference: CallReference::from_originator(5),
        call_identifier: CALL_ID,
        conference_id: CONFERENCE_ID,
        source: &source,
        destination: &destination,
        display: None,
        endpoint_identifier: None,
    })
    .unwrap();
    let relayed = with_call_reference(&octets, CallReference::from_originator(0x4321)).unwrap();
    let (message, relayed_facts) = facts(&relayed).unwrap();
    assert_eq!(
        message.call_reference,
        CallReference::from_originator(0x4321)
    );
    assert_eq!(relayed_facts, facts(&octets).unwrap().1);
}

fn call_reference() -> impl Strategy<Value = CallReference> {
    (0..=CallReference::MAX, any::<bool>()).prop_map(|(value, from_destination)| CallReference {
        value,
        from_destination,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary octets, and octets that start like a message, never panic any reader.
    #[test]
    fn readers_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..200),
        prefix in 0usize..4,
        crv in call_reference(),
    ) {
        let mut octets = [&[0x08, 0x02, 0x00, 0x01][..prefix], &tail[..]].concat();
        if let Ok(message) = Message::parse(&octets) {
            let _ = (message.cause(), message.called_party_number(), message.display());
            let _ = (message.user_user(), user_information(&message));
            prop_assert_eq!(message.elements().count(), message.elements().count());
        }
        let _ = facts(&octets);
        let _ = with_call_reference(&octets, crv);
        // The same octets behind a User-user element, so the PER decoder sees them.
        let len = (octets.len() + 1) as u16;
        octets.splice(0..0, [0x08, 0x02, 0x00, 0x01, 0x5a, 0x7e, (len >> 8) as u8, len as u8, 5]);
        let _ = facts(&octets);
    }

    /// Every prefix and every one-octet change of a good message reads or fails cleanly.
    #[test]
    fn damaged_messages_never_panic(at in 0usize..200, value in any::<u8>(), release in 0..Release::ALL.len()) {
        let octets = release_complete(CallReference::from_originator(3), Some(CALL_ID), Release::ALL[release]);
        let at = at % octets.len();
        let _ = facts(&octets[..at]);
        let mut changed = octets.to_vec();
        changed[at] = value;
        let _ = facts(&changed);
        let _ = with_call_reference(&changed, CallReference::default());
    }

    /// A Setup reads back with the call reference, identifiers and aliases it was built with,
    /// also after relaying under another call reference.
    #[test]
    fn setups_read_back(
        crv in call_reference(),
        relayed in call_reference(),
        call_identifier in any::<[u8; 16]>(),
        conference_id in any::<[u8; 16]>(),
        source in proptest::collection::vec(crate::ras::hot_strategies::alias(), 0..4),
        destination in proptest::collection::vec(crate::ras::hot_strategies::alias(), 0..4),
    ) {
        let octets = setup(&Setup {
            call_reference: crv,
            call_identifier,
            conference_id,
            source: &source,
            destination: &destination,
            display: None,
            endpoint_identifier: None,
        }).unwrap();
        let (message, facts) = facts(&octets).unwrap();
        prop_assert_eq!(message.call_reference, crv);
        prop_assert_eq!(facts.call_identifier, Some(call_identifier));
        prop_assert_eq!(facts.conference_id, Some(conference_id));
        prop_assert_eq!(&facts.source_aliases, &source);
        prop_assert_eq!(&facts.destination_aliases, &destination);
        let digits = destination.iter().find_map(|alias| match alias {
            Alias::DialledDigits(digits) => Some(digits.clone()),
            _ => None,
        });
        prop_assert_eq!(message.called_party_number(), digits);
        let moved = with_call_reference(&octets, relayed).unwrap();
        let (message, moved_facts) = super::facts(&moved).unwrap();
        prop_assert_eq!(message.call_reference, relayed);
        prop_assert_eq!(moved_facts, facts);
    }

    /// Every other builder reads back with its call reference and identifiers.
    #[test]
    fn answers_and_releases_read_back(
        crv in call_reference(),
        call_identifier in any::<[u8; 16]>(),
        conference_id in any::<[u8; 16]>(),
        release in 0..Release::ALL.len(),
    ) {
        let release = Release::ALL[release];
        for (octets, body) in [
            (call_proceeding(crv, call_identifier), BodyKind::CallProceeding),
            (alerting(crv, call_identifier), BodyKind::Alerting),
            (connect(crv, call_identifier, conference_id), BodyKind::Connect),
            (release_complete(crv, Some(call_identifier), release), BodyKind::ReleaseComplete),
        ] {
            let (message, facts) = facts(&octets).unwrap();
            prop_assert_eq!(message.call_reference, crv);
            prop_assert_eq!(facts.body, body);
            prop_assert_eq!(facts.call_identifier, Some(call_identifier));
            if body == BodyKind::Connect {
                prop_assert_eq!(facts.conference_id, Some(conference_id));
            }
            if body == BodyKind::ReleaseComplete {
                prop_assert_eq!(message.cause(), Some(release.cause()));
            }
        }
    }
}

#[test]
fn an_alternative_after_version_7_is_an_unknown_body() {
    // H323-UserInformation, H323-UU-PDU: no extensions, nothing optional; body: extension
    // alternative 1 (empty), then its open type: length 1, NULL padded to an octet.
    let empty = [
        0x08, 0x02, 0x00, 0x01, 0x62, 0x7e, 0x00, 0x05, 0x05, 0x08, 0x10, 0x01, 0x00,
    ];
    let (_, facts) = facts(&empty).unwrap();
    assert_eq!(facts.body, BodyKind::Empty);
    // The same with extension alternative 9, which H.225.0 version 7 does not have.
    let mut unknown = empty;
    unknown[10] = 0x90;
    let (message, facts) = super::facts(&unknown).unwrap();
    assert_eq!(message.message_type, MessageType::Facility);
    assert_eq!(facts.body, BodyKind::Unknown);
    assert_eq!(facts.call_identifier, None);
    let error = user_information(&message).unwrap_err();
    assert_eq!(
        error,
        Q931Error::UnknownBody {
            message_type: MessageType::Facility,
            at: 9,
        }
    );
}
