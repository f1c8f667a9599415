//! The call-signalling wire format against an outside oracle: every message the
//! `rasgk::q931` builders write, and a Setup relayed under another call reference, is framed
//! in TPKT, written as TCP segments on port 1720 into a pcap, and decoded by Wireshark's
//! TPKT, Q.931 and H.225.0 dissectors (`tshark -V`). The field values tshark prints are
//! checked, not only that it finds nothing malformed.
//!
//! tshark (4.0) decodes TCP port 1720 as TPKT → Q.931 → H.225.0 call signalling by itself:
//! no `-d` and no TCP reassembly option is needed while every segment holds one whole TPKT
//! frame. The test turns on TCP checksum validation (`-o tcp.check_checksum:TRUE`; IP
//! checksums are checked by `support::tshark::decode`). `RASGK_KEEP_PCAP=1` keeps the
//! capture and prints its path.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use rasgk::pcap::TcpSegment;
use rasgk::q931::{self, CallReference, Release, Setup};
use rasgk::ras::Alias;
use support::messages::{self, addr};
use support::tshark::{self, Frame};

/// The calling phone's signalling socket, the gatekeeper's, and the called phone's. The
/// caller's port is CBSP's (48049), as a phone's ephemeral port once was in a live test:
/// tshark must read Q.931 there all the same.
const CALLER: &str = "127.1.0.5:48049";
const GK_CALLS: &str = "127.0.1.3:1720";
const GK_TO_CALLEE: &str = "127.0.1.3:40002";
const CALLEE: &str = "127.1.0.6:1720";

const CALL_ID: [u8; 16] = [
    0x5d, 0x0d, 0x95, 0x95, 0x09, 0x52, 0xd6, 0x11, 0x98, 0xce, 0x00, 0x50, 0xda, 0xd0, 0x84, 0x80,
];
const CONFERENCE_ID: [u8; 16] = [
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00,
];

/// Wireshark's way of writing the GUIDs.
const CALL_ID_TEXT: &str = "5d0d9595-0952-d611-98ce-0050dad08480";
const CONFERENCE_ID_TEXT: &str = "11223344-5566-7788-99aa-bbccddeeff00";

/// One TCP connection: the sequence numbers of both directions, so that every segment
/// follows the one before it.
struct Connection {
    a: SocketAddr,
    b: SocketAddr,
    next_a: u32,
    next_b: u32,
}

impl Connection {
    fn new(a: &str, b: &str, isn_a: u32, isn_b: u32) -> Connection {
        Connection {
            a: addr(a),
            b: addr(b),
            next_a: isn_a,
            next_b: isn_b,
        }
    }

    /// A segment carrying one TPKT frame of `payload`, from a (or from b).
    fn send(&mut self, from_a: bool, payload: &[u8], time: Duration) -> TcpSegment {
        let frame = rasgk::tpkt::frame(payload).unwrap().to_vec();
        let (src, dst, seq, ack) = if from_a {
            (self.a, self.b, &mut self.next_a, self.next_b)
        } else {
            (self.b, self.a, &mut self.next_b, self.next_a)
        };
        let segment = TcpSegment {
            time,
            src,
            dst,
            seq: *seq,
            ack,
            payload: frame,
        };
        *seq = seq.wrapping_add(segment.payload.len() as u32);
        segment
    }
}

/// A message of the capture and what tshark must show for it.
struct Expected {
    name: &'static str,
    message_type: &'static str,
    call_reference: u16,
    from_destination: bool,
    body: &'static str,
    cause: Option<&'static str>,
    release_reason: Option<&'static str>,
}

/// Every message the builders write, and a relayed Setup, as TCP segments.
fn capture() -> (Vec<TcpSegment>, Vec<Expected>) {
    // The caller is the phone of the RAS wire tests: 50001 and Zoë, endpoint ep-0001.
    let endpoint = messages::ep_id();
    let (source, destination) = (
        messages::aliases(),
        [Alias::dialled_digits("50002").unwrap()],
    );
    let setup = q931::setup(&Setup {
        call_reference: CallReference::from_originator(0x1234),
        call_identifier: CALL_ID,
        conference_id: CONFERENCE_ID,
        source: &source,
        destination: &destination,
        display: Some("Zoe"),
        endpoint_identifier: Some(&endpoint),
    })
    .unwrap();
    let relayed = q931::with_call_reference(&setup, CallReference::from_originator(0x0042))
        .expect("a Setup of ours");
    let answer = CallReference::to_originator(0x0042);
    let back = CallReference::to_originator(0x1234);

    let mut caller = Connection::new(CALLER, GK_CALLS, 1_000, 5_000);
    let mut callee = Connection::new(GK_TO_CALLEE, CALLEE, 9_000, 20_000);
    let mut segments = Vec::new();
    let mut expected = Vec::new();
    let mut time = Duration::new(1_767_225_600, 0);
    let mut add = |segment: TcpSegment, e: Expected| {
        segments.push(segment);
        expected.push(e);
    };
    let mut tick = || {
        time += Duration::from_millis(10);
        time
    };
    let plain = |name, message_type, call_reference, from_destination, body| Expected {
        name,
        message_type,
        call_reference,
        from_destination,
        body,
        cause: None,
        release_reason: None,
    };

    add(
        caller.send(true, &setup, tick()),
        plain("Setup", "SETUP (0x05)", 0x1234, false, "setup (0)"),
    );
    add(
        callee.send(true, &relayed, tick()),
        plain("relayed Setup", "SETUP (0x05)", 0x0042, false, "setup (0)"),
    );
    add(
        callee.send(false, &q931::call_proceeding(answer, CALL_ID), tick()),
        plain(
            "Call Proceeding",
            "CALL PROCEEDING (0x02)",
            0x0042,
            true,
            "callProceeding (1)",
        ),
    );
    add(
        callee.send(false, &q931::alerting(answer, CALL_ID), tick()),
        plain("Alerting", "ALERTING (0x01)", 0x0042, true, "alerting (3)"),
    );
    add(
        callee.send(
            false,
            &q931::connect(answer, CALL_ID, CONFERENCE_ID),
            tick(),
        ),
        plain("Connect", "CONNECT (0x07)", 0x0042, true, "connect (2)"),
    );
    for release in Release::ALL {
        let (cause, reason) = release_fields(release);
        add(
            caller.send(
                false,
                &q931::release_complete(back, Some(CALL_ID), release),
                tick(),
            ),
            Expected {
                cause: Some(cause),
                release_reason: reason,
                ..plain(
                    "Release Complete",
                    "RELEASE COMPLETE (0x5a)",
                    0x1234,
                    true,
                    "releaseComplete (5)",
                )
            },
        );
    }
    (segments, expected)
}

/// What tshark prints for each reason: the Q.931 cause value and the
/// `ReleaseCompleteReason`.
fn release_fields(release: Release) -> (&'static str, Option<&'static str>) {
    match release {
        Release::NormalClearing => ("Normal call clearing (16)", None),
        Release::NoAnswer => (
            "No answer from user (user alerted) (19)",
            Some("undefinedReason (11)"),
        ),
        Release::CalledPartyNotRegistered => (
            "Subscriber absent (20)",
            Some("calledPartyNotRegistered (14)"),
        ),
        Release::CallerNotRegistered => {
            ("Normal unspecified (31)", Some("callerNotRegistered (15)"))
        }
        Release::GatekeeperResources => (
            "Resources unavailable, unspecified (47)",
            Some("gatekeeperResources (1)"),
        ),
        Release::Unreachable => (
            "No route to destination (3)",
            Some("unreachableDestination (2)"),
        ),
        Release::BadFormat => (
            "Invalid number format (incomplete number) (28)",
            Some("badFormatAddress (8)"),
        ),
        Release::InvalidCallReference => ("Invalid call reference value (81)", None),
        Release::InvalidMessage => ("Invalid message, unspecified (95)", None),
    }
}

fn tshark_reads(segments: &[TcpSegment]) -> tshark::Decoded {
    tshark::decode_tcp("q931", segments)
}

fn assert_value(frame: &Frame, name: &str, label: &str, expected: &str) {
    assert_eq!(
        frame.value(label).as_deref(),
        Some(expected),
        "{name} (frame {}): value of {label:?}\n{}",
        frame.number,
        frame.text()
    );
}

#[test]
fn tshark_decodes_every_call_signalling_message_with_our_values() {
    if tshark::require_tshark("tshark_decodes_every_call_signalling_message_with_our_values")
        .is_none()
    {
        return;
    }
    let (segments, expected) = capture();
    let decoded = tshark_reads(&segments);
    assert_eq!(
        decoded.frames.len(),
        expected.len(),
        "{}\n{}",
        decoded.command,
        decoded.stderr
    );
    for (e, frame) in expected.iter().zip(&decoded.frames) {
        let name = e.name;
        assert!(
            frame.malformed().is_empty(),
            "{name}: tshark reports {:?}\n{}",
            frame.malformed(),
            frame.text()
        );
        // Not even a warning: a sequence number out of line would be one ("Previous segment
        // not captured").
        assert!(
            !frame.has("[Expert Info"),
            "{name}: tshark has expert info\n{}",
            frame.text()
        );
        assert!(frame.has("TPKT, Version: 3"), "{name}\n{}", frame.text());
        assert_value(frame, name, "Message type", e.message_type);
        assert_value(frame, name, "Call reference value length", "2");
        assert_value(
            frame,
            name,
            "Call reference value",
            &format!("{:04x}", e.call_reference),
        );
        let flag = if e.from_destination {
            "Message sent to originating side"
        } else {
            "Message sent from originating side"
        };
        assert_value(frame, name, "Call reference flag", flag);
        assert_value(frame, name, "h323-message-body", e.body);
        assert_value(
            frame,
            name,
            "protocolIdentifier",
            "0.0.8.2250.0.4 (Version 4)",
        );
        assert_value(frame, name, "guid", CALL_ID_TEXT);
        assert_eq!(
            frame.value("Cause value").as_deref(),
            e.cause,
            "{name}: Cause value\n{}",
            frame.text()
        );
        assert_eq!(
            frame.value("reason").as_deref(),
            e.release_reason,
            "{name}: reason\n{}",
            frame.text()
        );
        match e.body {
            "setup (0)" => {
                let destination = frame.subtree("destinationAddress");
                assert_eq!(
                    tshark::values_of(destination.iter().copied(), "dialledDigits"),
                    ["50002"],
                    "{name}\n{}",
                    frame.text()
                );
                let source = frame.subtree("sourceAddress");
                assert_eq!(
                    tshark::values_of(source.iter().copied(), "h323-ID"),
                    ["Zoë"],
                    "{name}\n{}",
                    frame.text()
                );
                assert_value(frame, name, "Called party number digits", "50002");
                assert_value(frame, name, "Display information", "Zoe");
                assert_value(frame, name, "endpointIdentifier", "ep-0001");
                assert_value(frame, name, "conferenceID", CONFERENCE_ID_TEXT);
                assert_value(
                    frame,
                    name,
                    "Information transfer capability",
                    "Speech (0x00)",
                );
                assert_value(frame, name, "h245Tunnelling", "True");
            }
            "connect (2)" => {
                assert_value(frame, name, "conferenceID", CONFERENCE_ID_TEXT);
                assert_value(frame, name, "h245Tunnelling", "True");
            }
            "releaseComplete (5)" => {
                assert_value(
                    frame,
                    name,
                    "Cause location",
                    "Private network serving the local user (LPN) (1)",
                );
                assert_value(frame, name, "h245Tunnelling", "False");
            }
            _ => assert_value(frame, name, "h245Tunnelling", "True"),
        }
    }
}
