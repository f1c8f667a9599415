//! The wire format against an outside oracle: every message rasgk sends and every request a
//! phone sends is encoded by rasgk, written into a pcap, decoded by Wireshark's H.225.0
//! dissector (`tshark -V`), and the field values tshark prints are checked — not only that
//! it finds nothing malformed.

mod support;

use rasgk::pcap::{write_file, Datagram};
use rasgk::ras;
use support::messages::{self, addr, GK, PHONE_RAS};
use support::tshark::{self, Frame};

/// What tshark reads of these datagrams, written to a pcap of its own (`name` tells this
/// test's file from others').
fn tshark_reads(name: &str, datagrams: &[Datagram]) -> tshark::Decoded {
    let dir = std::env::temp_dir().join(format!("rasgk-wire-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join(format!("{name}.pcap"));
    write_file(&pcap, datagrams).unwrap();
    let decoded = tshark::decode(&pcap, &[]);
    std::fs::remove_dir_all(&dir).ok();
    decoded
}

fn assert_values(frame: &Frame, label: &str, expected: &[&str]) {
    let values = frame.values(label);
    assert_eq!(
        values,
        expected,
        "frame {}: values of {label:?}\n{}",
        frame.number,
        frame.text()
    );
}

fn assert_value(frame: &Frame, label: &str, expected: &str) {
    assert_eq!(
        frame.value(label).as_deref(),
        Some(expected),
        "frame {}: value of {label:?}\n{}",
        frame.number,
        frame.text()
    );
}

#[test]
fn tshark_decodes_every_message_with_the_values_we_put_in() {
    if tshark::require_tshark("tshark_decodes_every_message_with_the_values_we_put_in").is_none() {
        return;
    }
    let all = messages::all();
    let datagrams: Vec<Datagram> = all
        .iter()
        .enumerate()
        .map(|(i, (_, from_phone, message))| {
            let (src, dst) = if *from_phone {
                (PHONE_RAS, GK)
            } else {
                (GK, PHONE_RAS)
            };
            Datagram {
                frame: 0,
                time: std::time::Duration::new(1_767_225_600 + i as u64, 0),
                src: addr(src),
                dst: addr(dst),
                payload: ras::encode(message).expect("encodes"),
            }
        })
        .collect();
    let decoded = tshark_reads("all", &datagrams);
    assert_eq!(decoded.frames.len(), all.len(), "{}", decoded.stderr);

    for ((name, _, message), frame) in all.iter().zip(&decoded.frames) {
        assert!(
            frame.malformed().is_empty(),
            "{name}: tshark reports {:?}\n{}",
            frame.malformed(),
            frame.text()
        );
        assert_eq!(
            frame.ras_message().as_deref(),
            Some(ras::kind(message).asn1_name()),
            "{name}\n{}",
            frame.text()
        );
        assert_value(
            frame,
            "requestSeqNum",
            &ras::request_seq_num(message).to_string(),
        );
        check(name, frame);
    }
}

/// The fields tshark must show for each message of `messages::all()`.
fn check(name: &str, f: &Frame) {
    let phone_aliases = ["50001"];
    match name {
        "GRQ" => {
            assert_value(f, "protocolIdentifier", "0.0.8.2250.0.4 (Version 4)");
            assert_value(f, "ip", "127.1.0.5");
            assert_value(f, "port", "40001");
            assert_values(f, "dialledDigits", &phone_aliases);
            assert_values(f, "h323-ID", &["Zoë"]);
            assert_value(f, "gatekeeperIdentifier", "rasgk");
            assert!(f.has("terminal"), "{}", f.text());
        }
        "GCF" => {
            assert_value(f, "gatekeeperIdentifier", "rasgk");
            assert_value(f, "ip", "127.0.1.3");
            assert_value(f, "port", "1719");
        }
        "GRJ" => assert_value(f, "rejectReason", "resourceUnavailable (0)"),
        "RRQ" => {
            assert_value(f, "discoveryComplete", "True");
            assert_values(f, "ip", &["127.1.0.5", "127.1.0.5"]);
            assert_values(f, "port", &["1720", "40001"]);
            assert_values(f, "dialledDigits", &phone_aliases);
            assert_values(f, "h323-ID", &["Zoë"]);
            assert_value(f, "timeToLive", "300");
            assert_value(f, "keepAlive", "False");
            assert_value(f, "productId", "rasgk");
        }
        "RRQ-light" => {
            assert_value(f, "keepAlive", "True");
            assert_value(f, "endpointIdentifier", "ep-0001");
            assert_value(f, "timeToLive", "300");
        }
        "RCF" => {
            assert_value(f, "endpointIdentifier", "ep-0001");
            assert_value(f, "timeToLive", "300");
            assert_value(f, "gatekeeperIdentifier", "rasgk");
            assert_values(f, "dialledDigits", &phone_aliases);
            assert_value(f, "alternateGatekeeper", "16 items");
            for i in 0..16 {
                let item = f.subtree_path(&["alternateGatekeeper", &format!("Item {i}")]);
                let values = |label| tshark::values_of(item.iter().copied(), label);
                assert_eq!(values("ip"), [format!("127.0.1.{}", i + 1)], "AGL item {i}");
                assert_eq!(values("port"), ["1719"], "AGL item {i}");
                assert_eq!(values("needToRegister"), ["True"], "AGL item {i}");
                assert_eq!(values("priority"), [i.to_string()], "AGL item {i}");
            }
        }
        "RRJ-duplicate" => {
            assert_value(f, "rejectReason", "duplicateAlias (4)");
            assert_values(f, "dialledDigits", &phone_aliases);
        }
        "RRJ-full" => {
            assert_value(f, "rejectReason", "resourceUnavailable (9)");
            assert_value(f, "alternateGatekeeper", "2 items");
            assert_values(f, "ip", &["127.0.1.1", "127.0.1.2"]);
            assert_value(f, "altGKisPermanent", "False");
        }
        "URQ" => {
            assert_value(f, "endpointIdentifier", "ep-0001");
            assert_values(f, "dialledDigits", &phone_aliases);
            assert_value(f, "gatekeeperIdentifier", "rasgk");
        }
        "URQ-gk" => {
            assert_value(f, "reason", "reregistrationRequired (0)");
            assert_value(f, "alternateGatekeeper", "2 items");
            assert_values(f, "needToRegister", &["True", "True"]);
        }
        "UCF" => {}
        "URJ" => assert_value(f, "rejectReason", "notCurrentlyRegistered (0)"),
        "ARQ" => {
            assert_value(f, "endpointIdentifier", "ep-0001");
            assert_values(f, "dialledDigits", &["9#0123*45,6", "50001"]);
            assert_value(f, "bandWidth", "1280");
            assert_value(f, "callReferenceValue", "7");
            assert_value(f, "answerCall", "False");
        }
        "ACF" => {
            assert_value(f, "bandWidth", "1280");
            assert_value(f, "callModel", "direct (0)");
            assert_value(f, "ip", "127.0.2.1");
            assert_value(f, "port", "1720");
        }
        "ARJ" => assert_value(f, "rejectReason", "calledPartyNotRegistered (0)"),
        "BRQ" => {
            assert_value(f, "bandWidth", "640");
            assert_value(f, "endpointIdentifier", "ep-0001");
        }
        "BCF" => assert_value(f, "bandWidth", "640"),
        "DRQ" => {
            assert_value(f, "disengageReason", "normalDrop (1)");
            assert_value(f, "endpointIdentifier", "ep-0001");
        }
        "DCF" => {}
        "IRR" => {
            assert_value(f, "endpointIdentifier", "ep-0001");
            assert_value(f, "unsolicited", "True");
            assert_values(f, "dialledDigits", &phone_aliases);
        }
        "XRS" => assert_value(f, "messageNotUnderstood", "deadbeef"),
        "IACK" => assert_value(f, "requestSeqNum", "115"),
        "DRJ" => {
            assert_value(f, "requestSeqNum", "117");
            assert_value(f, "rejectReason", "notRegistered (0)");
        }
        "BRJ" => {
            assert_value(f, "requestSeqNum", "118");
            assert_value(f, "rejectReason", "notBound (0)");
            assert_value(f, "allowedBandWidth", "0");
        }
        "INAK" => {
            assert_value(f, "requestSeqNum", "116");
            assert_value(f, "nakReason", "notRegistered (0)");
        }
        other => panic!("no check for {other}"),
    }
}

/// The replies a gatekeeper writes with its hand-written encoders (GCF, the RCF of a full
/// RRQ and of a keep-alive, AGL included), read by tshark: not messages built for the
/// test, but what `Gatekeeper::handle` answers a phone.
#[test]
fn tshark_reads_the_gatekeepers_own_gcf_and_rcf() {
    use rasgk::gatekeeper::Gatekeeper;
    use rasgk::phone::{Answer, Phone};
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};

    if tshark::require_tshark("tshark_reads_the_gatekeepers_own_gcf_and_rcf").is_none() {
        return;
    }
    let config = rasgk::config::embedded_default();
    let discovery = config.gatekeeper.discovery;
    let gatekeeper_id = config.gatekeeper.gatekeeper_id.clone();
    let mut gatekeeper = Gatekeeper::new(config).expect("the embedded default starts");
    let start = Instant::now();
    let phone_ras = SocketAddr::from(([127, 1, 0, 9], 40_009));
    let mut phone = Phone::extension(4711, phone_ras);
    let mut exchange = |local: SocketAddr, request: Vec<u8>, datagrams: &mut Vec<Datagram>| {
        let out = gatekeeper.handle(start, local, phone_ras, &request);
        assert_eq!(out.len(), 1, "one reply");
        let reply = out[0].payload.to_vec();
        for (src, dst, payload) in [
            (phone_ras, local, request),
            (local, phone_ras, reply.clone()),
        ] {
            datagrams.push(Datagram {
                frame: 0,
                time: Duration::new(1_767_225_600 + datagrams.len() as u64, 0),
                src,
                dst,
                payload,
            });
        }
        Answer::read(&reply).expect("the reply decodes")
    };
    let mut datagrams = Vec::new();
    let Answer::Gcf {
        ras_address: Some(clan),
        ..
    } = exchange(discovery, phone.grq(), &mut datagrams)
    else {
        panic!("GRQ not confirmed");
    };
    let full = exchange(clan, phone.rrq(), &mut datagrams);
    phone.learn(&full);
    let Answer::Rcf { agl, .. } = &full else {
        panic!("RRQ not confirmed: {full:?}");
    };
    assert!(agl.len() > 1, "the default topology gives an AGL: {agl:?}");
    let keep_alive = exchange(
        clan,
        phone.keep_alive().expect("registered"),
        &mut datagrams,
    );
    assert!(matches!(keep_alive, Answer::Rcf { .. }), "{keep_alive:?}");

    let decoded = tshark_reads("own", &datagrams);
    assert_eq!(decoded.frames.len(), 6, "{}", decoded.stderr);
    for frame in &decoded.frames {
        assert!(frame.malformed().is_empty(), "{}", frame.text());
    }
    let gcf = &decoded.frames[1];
    assert_eq!(gcf.ras_message().as_deref(), Some("gatekeeperConfirm"));
    assert_value(gcf, "gatekeeperIdentifier", &gatekeeper_id);
    assert_value(gcf, "protocolIdentifier", "0.0.8.2250.0.4 (Version 4)");
    assert_value(gcf, "ip", &clan.ip().to_string());
    assert_value(gcf, "port", &clan.port().to_string());
    for rcf in [&decoded.frames[3], &decoded.frames[5]] {
        assert_eq!(rcf.ras_message().as_deref(), Some("registrationConfirm"));
        assert_value(rcf, "endpointIdentifier", "EP00000001");
        assert_value(rcf, "gatekeeperIdentifier", &gatekeeper_id);
        assert_values(rcf, "dialledDigits", &["4711"]);
        assert_value(rcf, "willRespondToIRR", "False");
        assert_value(rcf, "maintainConnection", "False");
        assert!(rcf.value("timeToLive").is_some(), "{}", rcf.text());
        assert_value(rcf, "alternateGatekeeper", &format!("{} items", agl.len()));
        for (i, entry) in agl.iter().enumerate() {
            let item = rcf.subtree_path(&["alternateGatekeeper", &format!("Item {i}")]);
            let values = |label| tshark::values_of(item.iter().copied(), label);
            assert_eq!(values("ip"), [entry.ip().to_string()], "AGL item {i}");
            assert_eq!(values("port"), [entry.port().to_string()], "AGL item {i}");
            assert_eq!(values("gatekeeperIdentifier"), [gatekeeper_id.as_str()]);
            assert_eq!(values("needToRegister"), ["True"], "AGL item {i}");
            assert_eq!(values("priority"), [i.to_string()], "AGL item {i}");
        }
    }
}

/// The RCF the gatekeeper itself writes names the C-LAN's call signalling address (its IP
/// and `signal_port`), not the phone's own, in count mode and in socket mode: as tshark
/// reads it.
#[test]
fn the_gatekeepers_rcf_names_the_clans_signalling_address() {
    if tshark::require_tshark("the_gatekeepers_rcf_names_the_clans_signalling_address").is_none() {
        return;
    }
    for (mode, port) in [("count", "1720"), ("tcp", "2720")] {
        let toml = format!(
            r#"
            [gatekeeper]
            sockets = "{mode}"
            [[region]]
            id = 1
            [[clan]]
            name = "a"
            region = 1
            address = "127.0.1.1:1719"
            signal_port = {port}
            "#
        );
        let config = rasgk::config::from_toml(&toml, "rcf.toml").unwrap();
        let mut gatekeeper = rasgk::gatekeeper::Gatekeeper::new(config).unwrap();
        let now = std::time::Instant::now();
        let mut phone = rasgk::phone::Phone::extension(6001, addr("127.1.0.5:40001"));
        let discovery = addr("127.0.0.1:1719");
        let clan = addr("127.0.1.1:1719");
        let grq = phone.grq();
        let _ = gatekeeper.handle(now, discovery, phone.ras_address, &grq);
        let rrq = phone.rrq();
        let rcf = gatekeeper.handle(now, clan, phone.ras_address, &rrq);
        let datagrams: Vec<Datagram> = [
            (phone.ras_address, clan, rrq),
            (clan, phone.ras_address, rcf[0].payload.to_vec()),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (src, dst, payload))| Datagram {
            frame: 0,
            time: std::time::Duration::new(1_767_225_600 + i as u64, 0),
            src,
            dst,
            payload,
        })
        .collect();
        let decoded = tshark_reads(&format!("rcf-{mode}"), &datagrams);
        let rrq = &decoded.frames[0];
        let rcf = &decoded.frames[1];
        assert_eq!(rcf.ras_message().as_deref(), Some("registrationConfirm"));
        let of = |frame: &Frame, label| {
            let tree = frame.subtree("callSignalAddress");
            (
                tshark::values_of(tree.iter().copied(), "ip"),
                tshark::values_of(tree.iter().copied(), label),
            )
        };
        assert_eq!(
            of(rrq, "port"),
            (vec!["127.1.0.5".to_string()], vec!["1720".to_string()]),
            "the phone's own\n{}",
            rrq.text()
        );
        assert_eq!(
            of(rcf, "port"),
            (vec!["127.0.1.1".to_string()], vec![port.to_string()]),
            "{mode}: the C-LAN's\n{}",
            rcf.text()
        );
    }
}
