//! Standard endpoints on routed calls through the C-LANs (docs/rules.md §8.4, §8.6, §8.7): a
//! real `rasgk serve` in socket mode with `call_signalling = "routed"`, and strict endpoints
//! of the test's own (`support::strict`) — as a stack with its own ASN.1 runtime, each
//! releases a call and closes its connection on anything that is not a Q.931 message of a
//! call it knows. They call each other both ways, over connections the callers open and
//! connections the gatekeeper opens to the callees, and a TTS one takes its call over the
//! socket the gatekeeper opened after its RCF. Every call connects and releases cleanly, and
//! tshark (`tshark -V`) reads everything the gatekeeper wrote to them: Q.931 messages of
//! their calls and nothing else — no empty TPKT frame.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rasgk::pcap::TcpSegment;
use rasgk::q931::MessageType;
use support::routed::{guid, guid_text, serve};
use support::server::Served;
use support::strict::{Connection, StrictEndpoint};
use support::tshark;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// The caller's side of a call it placed on `out`: Call Proceeding, Alerting, Connect.
fn hears_the_answer(out: &mut Connection) {
    for expected in [
        MessageType::CallProceeding,
        MessageType::Alerting,
        MessageType::Connect,
    ] {
        assert_eq!(out.next(), Ok(expected));
    }
}

/// The registration of extension `extension` in `/api/registrations`.
fn registration(served: &Served, extension: u32) -> serde_json::Value {
    let all = served.get_json("/api/registrations");
    let alias = extension.to_string();
    all.as_array()
        .unwrap()
        .iter()
        .find(|r| r["aliases"][0].as_str() == Some(alias.as_str()))
        .unwrap_or_else(|| panic!("{extension} is not registered: {all}"))
        .clone()
}

/// Waits up to 5 s for extension `extension`'s socket to reach `state`.
fn wait_socket(served: &Served, extension: u32, state: &str) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let registration = registration(served, extension);
        if registration["socket"] == state || start.elapsed() > Duration::from_secs(5) {
            assert_eq!(registration["socket"], state, "{registration}");
            return registration;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Quiet time after a call's last message: nothing more may come.
const QUIET: Duration = Duration::from_millis(300);

#[test]
fn strict_endpoints_call_both_ways_and_a_tts_one_on_its_socket_and_get_only_their_calls_messages() {
    let tshark_found = tshark::require_tshark(
        "strict_endpoints_call_both_ways_and_a_tts_one_on_its_socket_and_get_only_their_calls_messages",
    );
    let served = serve("strict", 66);
    let discovery = addr("127.0.66.1:1719");
    let mut a = StrictEndpoint::register("127.1.66.1", 6601, discovery);
    let mut b = StrictEndpoint::register("127.2.66.1", 6602, discovery);
    let mut t = StrictEndpoint::register("127.1.66.5", 56_601, discovery);
    assert_eq!(a.clan_signal, addr("127.0.66.11:1720"));
    assert_eq!(b.clan_signal, addr("127.0.66.21:1720"));

    // The TTS endpoint: the gatekeeper opens its socket after the RCF and writes nothing on
    // it (a strict endpoint would release on anything). Its socket is established all the
    // same: the C-LAN's establishment is over.
    let mut socket = t.accept();
    assert_eq!(socket.silent_for(Duration::from_millis(1500)), Ok(()));
    let held = wait_socket(&served, 56_601, "established");
    assert_eq!(held["tts"], true);
    // The two non-TTS endpoints hold places, waiting: they connect only to call.
    assert_eq!(registration(&served, 6601)["socket"], "waiting");

    // a calls b: over a's own connection to its C-LAN, and a connection the gatekeeper opens
    // to b for the call.
    let one = guid(1);
    let mut out = a.call(6602, one, 0x0101);
    let mut into = b.accept();
    assert_eq!(into.next(), Ok(MessageType::Setup));
    b.answer(&mut into);
    hears_the_answer(&mut out);
    out.release();
    assert_eq!(into.next(), Ok(MessageType::ReleaseComplete));
    assert_eq!(out.finish(QUIET), Ok(()));
    assert_eq!(into.finish(QUIET), Ok(()));
    a.close(out);
    b.close(into);
    a.disengage(one);
    b.disengage(one);

    // b calls a, the other way; the callee releases this time.
    let two = guid(2);
    let mut out = b.call(6601, two, 0x0202);
    let mut into = a.accept();
    assert_eq!(into.next(), Ok(MessageType::Setup));
    a.answer(&mut into);
    hears_the_answer(&mut out);
    into.release();
    assert_eq!(out.next(), Ok(MessageType::ReleaseComplete));
    assert_eq!(out.finish(QUIET), Ok(()));
    assert_eq!(into.finish(QUIET), Ok(()));
    b.close(out);
    a.close(into);
    b.disengage(two);
    a.disengage(two);

    // a calls the TTS endpoint: the Setup comes on the socket the gatekeeper opened after its
    // RCF, the first thing ever written on it.
    let three = guid(3);
    let mut out = a.call(56_601, three, 0x0303);
    assert_eq!(socket.next(), Ok(MessageType::Setup));
    t.answer(&mut socket);
    hears_the_answer(&mut out);
    socket.release();
    assert_eq!(out.next(), Ok(MessageType::ReleaseComplete));
    assert_eq!(out.finish(QUIET), Ok(()));
    assert_eq!(socket.finish(QUIET), Ok(()));
    a.close(out);
    // A standard endpoint closes its connection once the call is over: the socket was used,
    // so this is no decline, and the gatekeeper sets up the next one at once.
    t.close(socket);
    a.disengage(three);
    t.disengage(three);
    let mut again = t.accept();
    assert_eq!(again.silent_for(QUIET), Ok(()));
    let held = wait_socket(&served, 56_601, "established");
    assert_eq!(held["socket_declines"], 0, "{held}");

    assert_eq!(served.metric("rasgk_calls_connected_total"), 3.0);
    assert_eq!(served.metric("rasgk_call_setups_total"), 3.0);
    assert_eq!(served.metric("rasgk_calls_ended_total"), 3.0);
    assert_eq!(served.metric("rasgk_call_failures_total"), 0.0);
    assert_eq!(served.metric("rasgk_call_signal_bad_total"), 0.0);
    assert_eq!(served.metric("rasgk_tts_declines_total"), 0.0);
    assert_eq!(served.metric("rasgk_service_frames_total"), 0.0);
    // Closed with no call on it, the next socket is declined: the phone waits for its
    // back-off round.
    t.close(again);
    let declined = wait_socket(&served, 56_601, "declined");
    assert_eq!(declined["socket_declines"], 1, "{declined}");

    // Everything the gatekeeper wrote to the three, frame by frame, through tshark.
    let Some(_) = tshark_found else { return };
    let mut capture = Vec::new();
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let mut frames = 0usize;
    for endpoint in [&a, &b, &t] {
        for (gatekeeper, own, octets) in &endpoint.read {
            let mut seq = 1_000u32;
            let mut rest = &octets[..];
            while !rest.is_empty() {
                assert!(rest.len() >= 4, "a frame cut short: {rest:02x?}");
                let len = usize::from(u16::from_be_bytes([rest[2], rest[3]])).max(4);
                let (frame, after) = rest.split_at(len.min(rest.len()));
                capture.push(TcpSegment {
                    time: start + Duration::from_millis(frames as u64),
                    src: *gatekeeper,
                    dst: *own,
                    seq,
                    ack: 7_000,
                    payload: frame.to_vec(),
                });
                seq = seq.wrapping_add(frame.len() as u32);
                frames += 1;
                rest = after;
            }
        }
    }
    // a: b's answer (3), b's Setup and Release Complete (2), t's answer and Release Complete
    // (4); b: a's Setup and Release Complete (2), a's answer (3); t: a's Setup.
    let (a_read, b_read, t_read) = (9, 5, 1);
    assert_eq!(frames, a_read + b_read + t_read);
    let decoded = tshark::decode_tcp("strict", &capture);
    assert_eq!(decoded.frames.len(), frames, "{}", decoded.stderr);
    let calls = [one, two, three].map(guid_text);
    let mut kinds = Vec::new();
    for frame in &decoded.frames {
        let text = frame.text();
        assert!(
            frame.malformed().is_empty(),
            "{:?}\n{text}",
            frame.malformed()
        );
        assert!(frame.has("TPKT"), "{text}");
        let kind = frame
            .value("Message type")
            .unwrap_or_else(|| panic!("a frame with no Q.931 message:\n{text}"));
        assert!(
            frame.has("H.225.0"),
            "no H.225.0 user-user information:\n{text}"
        );
        let call = frame.value("guid").unwrap_or_default();
        assert!(
            calls.contains(&call),
            "{call:?} is none of the calls:\n{text}"
        );
        kinds.push(kind);
    }
    for (kind, count) in [
        ("SETUP (0x05)", 3),
        ("CALL PROCEEDING (0x02)", 3),
        ("ALERTING (0x01)", 3),
        ("CONNECT (0x07)", 3),
        ("RELEASE COMPLETE (0x5a)", 3),
    ] {
        assert_eq!(
            kinds.iter().filter(|k| *k == kind).count(),
            count,
            "{kind} in {kinds:?}"
        );
    }
}
