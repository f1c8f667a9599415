//! The wire format against an outside oracle: every message rasgk sends and every request a
//! phone sends is encoded by rasgk, written into a pcap, decoded by Wireshark's H.225.0
//! dissector (`tshark -V`), and the field values tshark prints are checked — not only that
//! it finds nothing malformed.

mod support;

use rasgk::pcap::{write_file, Datagram};
use rasgk::ras::{self, RasMessage};
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
        "IRQ" => {
            assert_value(f, "requestSeqNum", "119");
            assert_value(f, "callReferenceValue", "0");
            let reply = f.subtree("replyAddress");
            let gk = addr(GK);
            assert_eq!(
                tshark::values_of(reply.iter().copied(), "ip"),
                [gk.ip().to_string()]
            );
            assert_eq!(
                tshark::values_of(reply.iter().copied(), "port"),
                [gk.port().to_string()]
            );
        }
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

// ---------------------------------------------------------------------------------------------
// `rasgk decode --json` against tshark: text of every script
// ---------------------------------------------------------------------------------------------

/// Names in Latin-1, Greek, CJK (Han and Hangul) and astral-plane text (surrogate pairs in
/// UTF-16: a musical symbol, an emoji, a CJK Extension B character), and one with a lone
/// surrogate, as UTF-16 code units.
fn names() -> Vec<(&'static str, Vec<u16>)> {
    let mut names: Vec<(&str, Vec<u16>)> = [
        ("latin-1", "Zoë Ñúñez-Çå"),
        ("greek", "Ελένη Παπαδοπούλου"),
        ("cjk", "张伟 東京 서울"),
        ("astral", "𝄞 😀 𠀀"),
    ]
    .into_iter()
    .map(|(script, text)| (script, text.encode_utf16().collect()))
    .collect();
    names.push(("lone surrogate", vec![0x41, 0xD800, 0x42]));
    names
}

fn bmp_of_units(units: &[u16]) -> rasn::types::BmpString {
    let octets: Vec<u8> = units.iter().flat_map(|u| u.to_be_bytes()).collect();
    rasn::types::BmpString::try_from(&octets[..]).expect("units below U+FFFE")
}

/// GRQ, RCF and ARQ of `messages::all()` with every h323-ID, `endpointIdentifier` and
/// `gatekeeperIdentifier` they carry replaced by (or, for aliases, joined by) `units`.
fn named_messages(units: &[u16]) -> Vec<RasMessage> {
    use rasgk::ras::asn;
    let bmp = bmp_of_units(units);
    let h323_id = asn::AliasAddress::h323_ID(bmp.clone());
    let url =
        asn::AliasAddress::url_ID(rasn::types::Ia5String::try_from("h323:zoe@example").unwrap());
    let gk = || Some(asn::GatekeeperIdentifier(bmp.clone()));
    let mut out = Vec::new();
    for (name, _, mut message) in messages::all() {
        match (&mut message, name) {
            (RasMessage::gatekeeperRequest(m), "GRQ") => {
                m.endpoint_alias = Some(vec![h323_id.clone(), url.clone()]);
                m.gatekeeper_identifier = gk();
            }
            (RasMessage::registrationConfirm(m), "RCF") => {
                m.terminal_alias = Some(vec![h323_id.clone(), url.clone()]);
                m.endpoint_identifier = asn::EndpointIdentifier(bmp.clone());
                m.gatekeeper_identifier = gk();
            }
            (RasMessage::admissionRequest(m), "ARQ") => {
                m.src_info = vec![h323_id.clone(), url.clone()];
                m.endpoint_identifier = asn::EndpointIdentifier(bmp.clone());
                m.gatekeeper_identifier = gk();
            }
            _ => continue,
        }
        out.push(message);
    }
    assert_eq!(out.len(), 3, "GRQ, RCF and ARQ in messages::all()");
    out
}

/// The text fields a person reads, as (ASN.1 identifier, tshark field).
const TEXT_FIELDS: [(&str, &str); 4] = [
    ("h323-ID", "h225.h323_ID"),
    ("endpointIdentifier", "h225.endpointIdentifier"),
    ("gatekeeperIdentifier", "h225.gatekeeperIdentifier"),
    ("url-ID", "h225.url_ID"),
];

/// Every string under `key` anywhere in `value`, in document order.
fn strings_under(value: &serde_json::Value, key: &str, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(members) => {
            for (name, member) in members {
                match member {
                    serde_json::Value::String(text) if name == key => out.push(text.clone()),
                    _ => strings_under(member, key, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| strings_under(i, key, out)),
        _ => {}
    }
}

/// tshark's text of a field, from the octets it prints. tshark 4.0 reads a BMPString as
/// UCS-2 and writes every code unit as its own UTF-8 sequence, so a surrogate pair comes out
/// as two three-octet sequences (CESU-8; `-V` shows each as U+FFFD). Reading those octets
/// back into code units gives exactly the units tshark read from the wire; they are then
/// read as UTF-16, as rasgk reads them, an unpaired surrogate as U+FFFD.
fn tshark_text(octets: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(octets) {
        return text.to_string();
    }
    let mut units = Vec::new();
    let mut i = 0;
    while i < octets.len() {
        let lead = octets[i];
        let (len, bits) = match lead {
            0x00..=0x7F => (1, u32::from(lead)),
            0xC0..=0xDF => (2, u32::from(lead & 0x1F)),
            0xE0..=0xEF => (3, u32::from(lead & 0x0F)),
            0xF0..=0xF7 => (4, u32::from(lead & 0x07)),
            _ => panic!("tshark printed octet {lead:#04x} at {i} of {octets:02x?}"),
        };
        let code = octets[i + 1..i + len]
            .iter()
            .fold(bits, |code, &octet| (code << 6) | u32::from(octet & 0x3F));
        match char::from_u32(code) {
            Some(c) => units.extend(c.encode_utf16(&mut [0; 2]).iter()),
            None => units.push(code as u16), // a surrogate on its own
        }
        i += len;
    }
    String::from_utf16_lossy(&units)
}

/// `rasgk decode --json` on a capture of GRQ, RCF and ARQ carrying h323-IDs, endpoint and
/// gatekeeper identifiers in every script prints one valid JSON object a message, and each
/// such string is the one tshark shows for the same field of the same frame.
#[test]
fn decode_json_text_fields_equal_tsharks_in_every_script() {
    if tshark::require_tshark("decode_json_text_fields_equal_tsharks_in_every_script").is_none() {
        return;
    }
    let mut datagrams = Vec::new();
    let mut scripts = Vec::new();
    for (script, units) in names() {
        for message in named_messages(&units) {
            datagrams.push(Datagram {
                frame: 0,
                time: std::time::Duration::new(1_767_225_600 + datagrams.len() as u64, 0),
                src: addr(PHONE_RAS),
                dst: addr(GK),
                payload: ras::encode(&message).expect("encodes"),
            });
            scripts.push(script);
        }
    }
    let dir = std::env::temp_dir().join(format!("rasgk-wire-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("names.pcap");
    write_file(&pcap, &datagrams).unwrap();

    let decoded = std::process::Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["decode", "--json"])
        .arg(&pcap)
        .output()
        .expect("rasgk decode runs");
    assert!(decoded.status.success(), "{decoded:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8(decoded.stdout)
        .expect("UTF-8 output")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert_eq!(lines.len(), datagrams.len());

    let fields: Vec<String> = TEXT_FIELDS.iter().map(|(_, f)| format!("-e{f}")).collect();
    let mut args = vec!["-n", "-r", pcap.to_str().unwrap(), "-T", "fields"];
    args.extend([
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=|",
        "-E",
        "separator=/t",
    ]);
    args.extend(fields.iter().map(String::as_str));
    let exe = tshark::tshark().unwrap();
    let out = std::process::Command::new(&exe)
        .args(&args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{exe:?} {args:?}: {out:?}");
    let rows: Vec<&[u8]> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|r| !r.is_empty())
        .collect();
    assert_eq!(rows.len(), datagrams.len(), "one line a frame from tshark");
    std::fs::remove_dir_all(&dir).ok();

    let mut compared = 0;
    for ((line, row), script) in lines.iter().zip(&rows).zip(&scripts) {
        let frame = &line["frame"];
        assert!(line.get("error").is_none(), "frame {frame}: {line}");
        let columns: Vec<&[u8]> = row.split(|&b| b == b'\t').collect();
        let mut replaced = 0;
        assert_eq!(columns.len(), TEXT_FIELDS.len(), "frame {frame}");
        for ((key, field), column) in TEXT_FIELDS.iter().zip(columns) {
            let mut ours = Vec::new();
            strings_under(&line["message"], key, &mut ours);
            let mut theirs: Vec<String> = column
                .split(|&b| b == b'|')
                .filter(|v| !v.is_empty())
                .map(tshark_text)
                .collect();
            ours.sort();
            theirs.sort();
            // Every message carries the name in each of these (a GRQ has no endpoint id).
            let carried = *key != "endpointIdentifier" || line["type"] != "GRQ";
            assert_eq!(
                !ours.is_empty(),
                carried,
                "frame {frame} ({script}): {key} in {line}"
            );
            assert_eq!(
                ours, theirs,
                "frame {frame} ({script}): {key} / tshark {field}"
            );
            compared += ours.len();
            replaced += ours.iter().filter(|text| text.contains('\u{FFFD}')).count();
        }
        // Each BMPString of the lone-surrogate name has one U+FFFD, and it is counted.
        assert_eq!(
            line["unpaired_surrogates"], replaced,
            "frame {frame} ({script})"
        );
        assert_eq!(
            replaced > 0,
            *script == "lone surrogate",
            "frame {frame} ({script})"
        );
    }
    eprintln!(
        "{compared} strings in {} frames equal tshark's",
        lines.len()
    );
}

/// docs/rules.md §8.4: a phone that asks for the service frame puts rasgk's H.460.1 feature in
/// its full RRQ's `featureSet.desiredFeatures`; a socket-mode gatekeeper's RCF confirms it in
/// `supportedFeatures`. Both written by the hand-written encoders, as tshark reads them; a
/// phone that does not ask gets an RCF with no `featureSet` at all.
#[test]
fn tshark_reads_the_service_frame_feature_asked_for_and_confirmed() {
    if tshark::require_tshark("tshark_reads_the_service_frame_feature_asked_for_and_confirmed")
        .is_none()
    {
        return;
    }
    let toml = r#"
        [gatekeeper]
        sockets = "tcp"
        [[region]]
        id = 1
        [[clan]]
        name = "a"
        region = 1
        address = "127.0.1.1:1719"
        "#;
    let config = rasgk::config::from_toml(toml, "feature.toml").unwrap();
    let mut gatekeeper = rasgk::gatekeeper::Gatekeeper::new(config).unwrap();
    let now = std::time::Instant::now();
    let discovery = addr("127.0.0.1:1719");
    let clan = addr("127.0.1.1:1719");
    let mut datagrams = Vec::new();
    for (n, ask) in [(5u8, true), (6, false)] {
        let mut phone = rasgk::phone::Phone::extension(
            6000 + u32::from(n),
            addr(&format!("127.1.0.{n}:40001")),
        );
        phone.service_frame = ask;
        let grq = phone.grq();
        let _ = gatekeeper.handle(now, discovery, phone.ras_address, &grq);
        let rrq = phone.rrq();
        let rcf = gatekeeper.handle(now, clan, phone.ras_address, &rrq);
        for (src, dst, payload) in [
            (phone.ras_address, clan, rrq),
            (clan, phone.ras_address, rcf[0].payload.to_vec()),
        ] {
            datagrams.push(Datagram {
                frame: 0,
                time: std::time::Duration::new(1_767_225_600 + datagrams.len() as u64, 0),
                src,
                dst,
                payload,
            });
        }
    }
    let decoded = tshark_reads("service-frame", &datagrams);
    assert_eq!(decoded.frames.len(), 4, "{}", decoded.stderr);
    for frame in &decoded.frames {
        assert!(frame.malformed().is_empty(), "{}", frame.text());
    }
    let guid = "4d55ca3e-3d68-4034-99ea-ee5ae00c7f2e";
    let (rrq, rcf) = (&decoded.frames[0], &decoded.frames[1]);
    assert_eq!(rrq.ras_message().as_deref(), Some("registrationRequest"));
    assert_value(rrq, "replacementFeatureSet", "False");
    assert_value(rrq, "desiredFeatures", "1 item");
    assert!(rrq.value("supportedFeatures").is_none(), "{}", rrq.text());
    let asked = rrq.subtree_path(&["desiredFeatures", "Item 0"]);
    assert_eq!(
        tshark::values_of(asked.iter().copied(), "nonStandard"),
        [guid]
    );
    assert_eq!(rcf.ras_message().as_deref(), Some("registrationConfirm"));
    assert_value(rcf, "supportedFeatures", "1 item");
    assert!(rcf.value("desiredFeatures").is_none(), "{}", rcf.text());
    let confirmed = rcf.subtree_path(&["supportedFeatures", "Item 0"]);
    assert_eq!(
        tshark::values_of(confirmed.iter().copied(), "nonStandard"),
        [guid]
    );
    // The phone that did not ask: no featureSet either way.
    for frame in &decoded.frames[2..] {
        assert!(frame.value("featureSet").is_none(), "{}", frame.text());
        assert!(!frame.has(guid), "{}", frame.text());
    }
}
