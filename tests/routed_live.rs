//! Routed calls and declined sockets end to end on loopback (docs/rules.md §8.6, §8.7): a real
//! `rasgk serve` in socket mode with `call_signalling = "routed"`, phones of the test's own on
//! real UDP and TCP sockets, and Wireshark (`tshark -V`) as the outside judge of every
//! call-signalling message the gatekeeper wrote to them.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rasgk::pcap::TcpSegment;
use rasgk::phone::{Answer, Phone};
use rasgk::q931::{self, CallReference, MessageType, Release, Setup};
use rasgk::ras::Alias;
use support::browser::{require_chromium, Browser};
use support::routed::{guid, guid_text, serve};
use support::server::UdpPhone;
use support::tshark;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// Registers `phone` (GRQ at `discovery`, RRQ where the GCF says): the RCF's
/// callSignalAddress (its C-LAN's signalling address).
fn register(phone: Phone, discovery: SocketAddr) -> (UdpPhone, SocketAddr) {
    let mut udp = UdpPhone::bind(phone);
    match udp.register(discovery) {
        (
            _,
            Some(Answer::Rcf {
                call_signal_address: Some(signal),
                ..
            }),
        ) => (udp, signal),
        other => panic!("registration failed: {other:?}"),
    }
}

/// Reads one TPKT frame's payload (empty frames included), waiting at most 5 s.
fn read_frame(stream: &mut TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).expect("a TPKT header");
    assert_eq!(header[0], 3, "TPKT version");
    let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
    let mut payload = vec![0u8; len - 4];
    stream.read_exact(&mut payload).expect("a TPKT payload");
    payload
}

fn write_message(stream: &mut TcpStream, payload: &[u8]) {
    stream
        .write_all(&rasgk::tpkt::frame(payload).unwrap())
        .unwrap();
}

/// A phone's signalling socket, with what the gatekeeper wrote on it kept for the capture.
struct Socket {
    stream: TcpStream,
    /// Every Q.931 payload the gatekeeper wrote, in order.
    received: Vec<Vec<u8>>,
}

impl Socket {
    /// Connects from `ip` to its C-LAN and waits for the service frame.
    fn connect(ip: &str, signal: SocketAddr) -> Socket {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.bind(&addr(&format!("{ip}:0")).into()).unwrap();
        socket.connect(&signal.into()).unwrap();
        let mut stream: TcpStream = socket.into();
        assert!(
            read_frame(&mut stream).is_empty(),
            "the service frame first"
        );
        Socket {
            stream,
            received: Vec::new(),
        }
    }

    /// The next Q.931 message the gatekeeper writes.
    fn next(&mut self) -> (MessageType, CallReference, Vec<u8>) {
        loop {
            let payload = read_frame(&mut self.stream);
            if payload.is_empty() {
                continue;
            }
            let message = q931::Message::parse(&payload).expect("Q.931 from the gatekeeper");
            let seen = (message.message_type, message.call_reference);
            self.received.push(payload.clone());
            return (seen.0, seen.1, payload);
        }
    }

    fn send(&mut self, payload: &[u8]) {
        write_message(&mut self.stream, payload);
    }
}

fn setup_from(phone: &Phone, extension: u32, to: u32, crv: u16, call: [u8; 16]) -> Vec<u8> {
    let source = [Alias::dialled_digits(&extension.to_string()).unwrap()];
    let destination = [Alias::dialled_digits(&to.to_string()).unwrap()];
    q931::setup(&Setup {
        call_reference: CallReference::from_originator(crv),
        call_identifier: call,
        conference_id: call,
        source: &source,
        destination: &destination,
        display: None,
        endpoint_identifier: phone.endpoint_id.as_ref(),
    })
    .unwrap()
    .to_vec()
}

/// What tshark must show for one message the gatekeeper wrote.
struct Expected {
    message_type: &'static str,
    call_reference: u16,
    to_originator: bool,
    guid: [u8; 16],
    cause: Option<&'static str>,
}

/// Writes `payloads` as TCP segments from `gatekeeper` to `phone`, one TPKT frame each.
fn segments(gatekeeper: SocketAddr, phone: SocketAddr, payloads: &[Vec<u8>]) -> Vec<TcpSegment> {
    let mut seq = 1_000u32;
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    payloads
        .iter()
        .enumerate()
        .map(|(n, payload)| {
            let frame = rasgk::tpkt::frame(payload).unwrap().to_vec();
            let segment = TcpSegment {
                time: start + Duration::from_millis(n as u64),
                src: gatekeeper,
                dst: phone,
                seq,
                ack: 7_000,
                payload: frame,
            };
            seq = seq.wrapping_add(segment.payload.len() as u32);
            segment
        })
        .collect()
}

/// Two phones of the test call each other through the gatekeeper: every message crosses from
/// one leg to the other with its call reference mapped; a Setup to nobody and a message for
/// no call are released. Everything the gatekeeper wrote on the two sockets then goes into a
/// pcap, which tshark must read as TPKT / Q.931 / H.225.0 with our values and nothing
/// malformed.
#[test]
fn a_call_between_two_phones_is_relayed_and_tshark_reads_every_message_the_gatekeeper_wrote() {
    let tshark_found = tshark::require_tshark(
        "a_call_between_two_phones_is_relayed_and_tshark_reads_every_message_the_gatekeeper_wrote",
    );
    let served = serve("routed", 62);
    let discovery = addr("127.0.62.1:1719");
    // Phones of rasgk's own: they hold their sockets, and ask to be told when they are in
    // service (docs/rules.md §8.4). Standard endpoints are tests/strict_endpoint.rs's.
    let asking = |extension, ras: &str| {
        let mut phone = Phone::extension(extension, addr(ras));
        phone.service_frame = true;
        phone
    };
    let (mut a_ras, a_signal) = register(asking(6101, "127.1.62.1:1719"), discovery);
    let (_b_ras, b_signal) = register(asking(6102, "127.2.62.1:1719"), discovery);
    assert_eq!(a_signal, addr("127.0.62.11:1720"));
    assert_eq!(b_signal, addr("127.0.62.21:1720"));
    let mut a = Socket::connect("127.1.62.1", a_signal);
    let mut b = Socket::connect("127.2.62.1", b_signal);
    // The dashboard, open before the call: its C-LANs show the calls, its event list the
    // call's events.
    let mut page = require_chromium(
        "a_call_between_two_phones_is_relayed_and_tshark_reads_every_message_the_gatekeeper_wrote",
    )
    .map(|chromium| {
        let mut page = Browser::open(&chromium, "http://127.0.62.1:7000/");
        page.wait_until(
            "the page to draw its C-LANs",
            "document.querySelectorAll('[data-clan]').length >= 2",
        );
        page
    });

    // The ARQ: confirmed routed, to the caller's own C-LAN.
    let call = guid(1);
    let arq = a_ras.phone.arq("6102", call).unwrap();
    match a_ras.ask(addr("127.0.62.11:1719"), &arq) {
        Answer::Acf { dest, .. } => assert_eq!(dest, Some(a_signal)),
        other => panic!("expected ACF, got {other:?}"),
    }

    // Setup → the callee, under a call reference of the gatekeeper's (flag 0).
    a.send(&setup_from(&a_ras.phone, 6101, 6102, 0x1234, call));
    let (kind, crv_b, payload) = b.next();
    assert_eq!(kind, MessageType::Setup);
    assert!(!crv_b.from_destination);
    let (_, facts) = q931::facts(&payload).unwrap();
    assert_eq!(facts.call_identifier, Some(call));
    // The callee answers; the caller hears each under its own call reference (flag 1).
    let answer = crv_b.reversed();
    b.send(&q931::call_proceeding(answer, call));
    b.send(&q931::alerting(answer, call));
    b.send(&q931::connect(answer, call, call));
    let back = CallReference::to_originator(0x1234);
    for expected in [
        MessageType::CallProceeding,
        MessageType::Alerting,
        MessageType::Connect,
    ] {
        let (kind, crv, _) = a.next();
        assert_eq!((kind, crv), (expected, back));
    }
    let calls = served.get_json("/api/calls");
    let routed = &calls.as_array().unwrap()[0];
    assert_eq!(routed["kind"], "routed");
    assert_eq!(routed["state"], "connected");
    assert_eq!(routed["caller_leg"]["clan"], "r1");
    assert_eq!(routed["callee_leg"]["clan"], "r2");
    let clans = served.get_json("/api/clans");
    assert_eq!(clans[0]["calls"], 1);
    assert_eq!(clans[1]["calls"], 1);
    let calls_on = |clan: &str| {
        format!(
            "[...document.querySelectorAll('[data-clan=\"{clan}\"]')]\
             .some(e => e.dataset.calls === '1')"
        )
    };
    if let Some(page) = page.as_mut() {
        page.wait_until("a call on r1", &calls_on("r1"));
        page.wait_until("a call on r2", &calls_on("r2"));
        page.wait_until(
            "the call's events",
            "!!document.querySelector('#events [data-type=\"call_setup\"]') && \
             !!document.querySelector('#events [data-type=\"call_connected\"]')",
        );
    }
    // The caller hangs up: the callee hears it.
    a.send(&q931::release_complete(
        CallReference::from_originator(0x1234),
        Some(call),
        Release::NormalClearing,
    ));
    let (kind, crv, _) = b.next();
    assert_eq!((kind, crv), (MessageType::ReleaseComplete, crv_b));
    if let Some(page) = page.as_mut() {
        page.wait_until(
            "the call's end",
            "!!document.querySelector('#events [data-type=\"call_ended\"]') && \
             [...document.querySelectorAll('[data-calls]')].every(e => e.dataset.calls === '0')",
        );
    }
    drop(page);

    // A Setup to nobody, and a message for no call: released by the gatekeeper.
    let nobody = guid(2);
    a.send(&setup_from(&a_ras.phone, 6101, 6999, 0x0101, nobody));
    let (kind, crv, payload) = a.next();
    assert_eq!(
        (kind, crv),
        (
            MessageType::ReleaseComplete,
            CallReference::to_originator(0x0101)
        )
    );
    assert_eq!(q931::Message::parse(&payload).unwrap().cause(), Some(20));
    a.send(&q931::alerting(
        CallReference::from_originator(0x0777),
        call,
    ));
    let (kind, _, payload) = a.next();
    assert_eq!(kind, MessageType::ReleaseComplete);
    assert_eq!(q931::Message::parse(&payload).unwrap().cause(), Some(81));

    assert_eq!(served.metric("rasgk_calls_connected_total"), 1.0);
    assert_eq!(served.metric("rasgk_call_setups_total"), 1.0);
    // The call the caller released, and the Setup to nobody (a failure); the message for no
    // call is bad input.
    assert_eq!(served.metric("rasgk_calls_ended_total"), 2.0);
    assert_eq!(served.metric("rasgk_call_failures_total"), 1.0);
    assert_eq!(served.metric("rasgk_call_signal_bad_total"), 1.0);

    // Every message the gatekeeper wrote, through tshark.
    let Some(_) = tshark_found else { return };
    let a_local = a.stream.local_addr().unwrap();
    let b_local = b.stream.local_addr().unwrap();
    let b_peer = b.stream.peer_addr().unwrap();
    let mut capture = segments(a_signal, a_local, &a.received);
    capture.extend(segments(b_peer, b_local, &b.received));
    let to_a = |message_type, cause, guid| Expected {
        message_type,
        call_reference: 0x1234,
        to_originator: true,
        guid,
        cause,
    };
    let mut expected = vec![
        to_a("CALL PROCEEDING (0x02)", None, call),
        to_a("ALERTING (0x01)", None, call),
        to_a("CONNECT (0x07)", None, call),
        Expected {
            call_reference: 0x0101,
            ..to_a(
                "RELEASE COMPLETE (0x5a)",
                Some("Subscriber absent (20)"),
                nobody,
            )
        },
        Expected {
            call_reference: 0x0777,
            ..to_a(
                "RELEASE COMPLETE (0x5a)",
                Some("Invalid call reference value (81)"),
                [0; 16],
            )
        },
    ];
    let to_b = |message_type, cause| Expected {
        message_type,
        call_reference: crv_b.value,
        to_originator: false,
        guid: call,
        cause,
    };
    expected.push(to_b("SETUP (0x05)", None));
    expected.push(to_b(
        "RELEASE COMPLETE (0x5a)",
        Some("Normal call clearing (16)"),
    ));
    assert_eq!(a.received.len() + b.received.len(), expected.len());

    let decoded = tshark::decode_tcp("routed-live", &capture);
    assert_eq!(decoded.frames.len(), expected.len(), "{}", decoded.stderr);
    for (e, frame) in expected.iter().zip(&decoded.frames) {
        let text = frame.text();
        assert!(
            frame.malformed().is_empty(),
            "{:?}\n{text}",
            frame.malformed()
        );
        assert_eq!(
            frame.value("Message type").as_deref(),
            Some(e.message_type),
            "{text}"
        );
        assert_eq!(
            frame.value("Call reference value").as_deref(),
            Some(format!("{:04x}", e.call_reference).as_str()),
            "{text}"
        );
        let flag = if e.to_originator {
            "Message sent to originating side"
        } else {
            "Message sent from originating side"
        };
        assert_eq!(
            frame.value("Call reference flag").as_deref(),
            Some(flag),
            "{text}"
        );
        assert_eq!(frame.value("guid"), Some(guid_text(e.guid)), "{text}");
        assert_eq!(frame.value("Cause value").as_deref(), e.cause, "{text}");
    }
}

/// A TTS phone that closes every socket the gatekeeper opens to it (as a standard H.323
/// endpoint does) gets a connection only after each back-off round: 0, 1, 3, 7 s, so four in
/// 8.5 s where the gatekeeper once made dozens a second. Nothing is written on any of them
/// (it did not ask for the service frame); each is counted as a decline, and the phone shows
/// as declining.
#[test]
fn a_tts_phone_that_declines_every_socket_is_reconnected_only_after_back_off_rounds() {
    let served = serve("routed", 63);
    let listener = TcpListener::bind("127.1.63.50:0").unwrap();
    let mut phone = Phone::extension(50_001, addr("127.1.63.50:1719"));
    phone.call_signal_address = listener.local_addr().unwrap();
    let (_udp, _) = register(phone, addr("127.0.63.1:1719"));
    listener.set_nonblocking(true).unwrap();
    let start = Instant::now();
    let mut accepted = Vec::new();
    while start.elapsed() < Duration::from_millis(8_500) {
        match listener.accept() {
            Ok((mut stream, _)) => {
                accepted.push(start.elapsed());
                // Nothing comes (no Setup: it closes the connection, "First PDU is not a
                // Setup", or after waiting for one).
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_millis(50)))
                    .unwrap();
                let mut octet = [0u8; 1];
                match stream.read(&mut octet) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    other => panic!("the gatekeeper wrote on the socket: {other:?}"),
                }
                drop(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
    let seconds: Vec<f64> = accepted.iter().map(Duration::as_secs_f64).collect();
    assert_eq!(accepted.len(), 4, "connections at {seconds:?} s");
    for (at, round) in accepted.iter().zip([0.0, 1.0, 3.0, 7.0]) {
        assert!(
            (at.as_secs_f64() - round).abs() < 0.5,
            "connections at {seconds:?} s, rounds at 0, 1, 3, 7"
        );
    }
    let registrations = served.get_json("/api/registrations");
    let registration = &registrations.as_array().unwrap()[0];
    assert_eq!(registration["socket"], "declined");
    assert_eq!(registration["socket_declines"], 4);
    assert_eq!(served.metric("rasgk_tts_declines_total"), 4.0);
    assert_eq!(served.metric("rasgk_tts_connects_total"), 4.0);
    assert_eq!(served.metric("rasgk_tts_declining_phones"), 1.0);
    assert_eq!(served.metric("rasgk_service_frames_total"), 0.0);
}
