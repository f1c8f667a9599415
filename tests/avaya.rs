//! Avaya endpoints (docs/rules.md §14): their GRQ and RRQ carry Avaya's CCMS `nonStandardData`
//! under 2.16.840.1.113778.4.2.1; the gatekeeper's GCF and RCF to them leave out
//! `gatekeeperIdentifier` (some crash on it), and their registration shows as Avaya with
//! the MAC address of the login request.
//!
//! The requests are `fixtures/avaya/ccms.pcap` (recorded by
//! `examples/record_avaya_fixture.rs`): checked to be what rasgk's phone simulator writes,
//! read by tshark, then answered by the gatekeeper core — and the same requests without
//! their `nonStandardData` — with every reply read by tshark too. No sockets.

mod support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rasgk::gatekeeper::Gatekeeper;
use rasgk::pcap::Datagram;
use rasgk::phone::{Answer, Phone};
use rasgk::ras::{self, avaya::Mac, RasMessage};
use support::tshark::{self, Frame};

/// The fixture's phone: as `examples/record_avaya_fixture.rs` makes it.
const MAC: Mac = Mac([0x00, 0x00, 0x5e, 0x00, 0x53, 0x01]);

fn fixture_phone() -> Phone {
    let mut phone = Phone::extension(4712, SocketAddr::from(([127, 1, 0, 60], 1719)));
    phone.avaya = Some(MAC);
    phone
}

fn capture() -> rasgk::pcap::Capture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/avaya/ccms.pcap");
    rasgk::pcap::read_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture() -> Vec<Datagram> {
    capture().datagrams
}

/// `rasgk decode` shows the fixture's requests as an Avaya endpoint's, the RRQ with its MAC
/// address, in its lines and in its JSON.
#[test]
fn decode_shows_avaya_endpoints_and_their_mac_address() {
    let report = rasgk::inspect::entries(&capture(), &[]);
    assert_eq!(report.entries.len(), 2);
    let start = report.entries[0].time;
    let lines: Vec<String> = report
        .entries
        .iter()
        .map(|entry| rasgk::inspect::line(entry, start))
        .collect();
    assert!(lines[0].ends_with(" vendor=avaya"), "{}", lines[0]);
    assert!(
        lines[1].ends_with(" vendor=avaya mac=00:00:5e:00:53:01"),
        "{}",
        lines[1]
    );
    let json: Vec<serde_json::Value> = report.entries.iter().map(rasgk::inspect::json).collect();
    assert_eq!(json[0]["avaya"], serde_json::json!({ "mac": null }));
    assert_eq!(
        json[1]["avaya"],
        serde_json::json!({ "mac": "00:00:5e:00:53:01" })
    );
    assert_eq!(json[1]["type"], "RRQ");
}

/// What tshark reads of `datagrams`, through a pcap of its own.
fn tshark_reads(name: &str, datagrams: &[Datagram]) -> tshark::Decoded {
    let dir = std::env::temp_dir().join(format!("rasgk-avaya-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join(format!("{name}.pcap"));
    rasgk::pcap::write_file(&pcap, datagrams).unwrap();
    let decoded = tshark::decode(&pcap, &[]);
    std::fs::remove_dir_all(&dir).ok();
    decoded
}

fn value(frame: &Frame, label: &str) -> Option<String> {
    frame.value(label)
}

/// The fixture is what rasgk's codec writes for an Avaya phone today: a known answer, so
/// neither the simulator nor the fixture drifts unnoticed.
#[test]
fn the_fixture_is_what_the_phone_simulator_writes() {
    let datagrams = fixture();
    assert_eq!(datagrams.len(), 2);
    let mut phone = fixture_phone();
    assert_eq!(datagrams[0].payload, phone.grq(), "the GRQ");
    assert_eq!(datagrams[1].payload, phone.rrq(), "the RRQ");
    for datagram in &datagrams {
        let message = ras::decode(&datagram.payload).unwrap();
        let marked = rasgk::inspect::avaya(&message).expect("marked as Avaya");
        let expected = match message {
            RasMessage::gatekeeperRequest(_) => None,
            _ => Some(MAC),
        };
        assert_eq!(marked.mac, expected);
    }
}

/// tshark reads the fixture's `nonStandardData`: the object identifier, the discovery
/// request in the GRQ and the login request with the MAC address at octets 13 to 18 in the
/// RRQ.
#[test]
fn tshark_reads_the_ccms_payloads_of_the_fixture() {
    if tshark::require_tshark("tshark_reads_the_ccms_payloads_of_the_fixture").is_none() {
        return;
    }
    let decoded = tshark_reads("fixture", &fixture());
    assert_eq!(decoded.frames.len(), 2, "{}", decoded.stderr);
    for frame in &decoded.frames {
        assert!(frame.malformed().is_empty(), "{}", frame.text());
        let object = value(frame, "object").unwrap_or_default();
        assert!(
            object.starts_with("2.16.840.1.113778.4.2.1"),
            "{}",
            frame.text()
        );
    }
    let (grq, rrq) = (&decoded.frames[0], &decoded.frames[1]);
    assert_eq!(grq.ras_message().as_deref(), Some("gatekeeperRequest"));
    assert_eq!(value(grq, "Data").as_deref(), Some("850140"));
    assert_eq!(rrq.ras_message().as_deref(), Some("registrationRequest"));
    let data = value(rrq, "Data").unwrap_or_default();
    assert_eq!(&data[2..4], "81", "a login request: {data}");
    assert_eq!(&data[24..26], "06", "the MAC address's length: {data}");
    assert_eq!(&data[26..38], "00005e005301", "the MAC address: {data}");
}

/// The requests without their `nonStandardData`: the same phone, not marked as Avaya.
fn without_non_standard_data(payload: &[u8]) -> Vec<u8> {
    let mut message = ras::decode(payload).unwrap();
    match &mut message {
        RasMessage::gatekeeperRequest(grq) => grq.non_standard_data = None,
        RasMessage::registrationRequest(rrq) => rrq.non_standard_data = None,
        other => panic!("not a GRQ or RRQ: {other:?}"),
    }
    ras::encode(&message).unwrap()
}

/// The GRQ and the RRQ (at the C-LAN the GCF names) answered by a gatekeeper on the default
/// configuration: the four datagrams, requests and replies.
fn exchange(requests: [Vec<u8>; 2]) -> (Vec<Datagram>, Gatekeeper) {
    let config = rasgk::config::embedded_default();
    let discovery = config.gatekeeper.discovery;
    let mut gatekeeper = Gatekeeper::new(config).unwrap();
    let now = Instant::now();
    let phone: SocketAddr = "127.1.0.60:1719".parse().unwrap();
    let mut datagrams = Vec::new();
    let mut to = discovery;
    for request in requests {
        let replies = gatekeeper.handle(now, to, phone, &request);
        assert_eq!(replies.len(), 1, "one reply");
        let reply = replies[0].payload.to_vec();
        for (src, dst, payload) in [(phone, to, request), (to, phone, reply.clone())] {
            datagrams.push(Datagram {
                frame: 0,
                time: Duration::new(1_704_067_200 + datagrams.len() as u64, 0),
                src,
                dst,
                payload,
            });
        }
        if let Ok(Answer::Gcf {
            ras_address: Some(clan),
            ..
        }) = Answer::read(&reply)
        {
            to = clan;
        }
    }
    (datagrams, gatekeeper)
}

/// An Avaya GRQ and RRQ get a GCF and an RCF without `gatekeeperIdentifier` (nor in the
/// RCF's alternate gatekeepers), as tshark reads them; the same requests without the
/// `nonStandardData` get both with it. The registration shows as Avaya with its MAC.
#[test]
fn avaya_endpoints_get_gcf_and_rcf_without_gatekeeper_identifier() {
    let fixture = fixture();
    let avaya = [fixture[0].payload.clone(), fixture[1].payload.clone()];
    let plain = avaya
        .clone()
        .map(|payload| without_non_standard_data(&payload));
    let (avaya_datagrams, mut avaya_gatekeeper) = exchange(avaya);
    let (plain_datagrams, plain_gatekeeper) = exchange(plain);

    // The core's own view first, without tshark.
    let registrations = avaya_gatekeeper.registrations();
    assert_eq!(registrations.len(), 1);
    assert!(registrations[0].avaya);
    assert_eq!(registrations[0].mac.as_deref(), Some("00:00:5e:00:53:01"));
    assert_eq!(registrations[0].clan.as_deref(), Some("clan-1a"));
    let registrations = plain_gatekeeper.registrations();
    assert!(!registrations[0].avaya);
    assert_eq!(registrations[0].mac, None);
    // It stays an Avaya endpoint across a restart from the state file …
    let now = Instant::now();
    let state = avaya_gatekeeper.snapshot_state(now);
    let config = rasgk::config::embedded_default();
    let wall = Duration::from_secs(1_704_067_200);
    let (restored, _) = Gatekeeper::restore(config, &state, now, wall).unwrap();
    let registrations = restored.registrations();
    assert!(registrations[0].avaya);
    assert_eq!(registrations[0].mac.as_deref(), Some("00:00:5e:00:53:01"));
    // … and the URQ that sends it elsewhere names no gatekeeper either.
    let clan_1a = avaya_gatekeeper.clan_by_name("clan-1a").unwrap();
    let urqs = avaya_gatekeeper.set_in_service(now, clan_1a, false);
    let RasMessage::unregistrationRequest(urq) = ras::decode(&urqs[0].payload).unwrap() else {
        panic!("a URQ");
    };
    assert_eq!(urq.gatekeeper_identifier, None);
    let alternates = urq.alternate_gatekeeper.unwrap_or_default();
    assert!(!alternates.is_empty());
    assert!(alternates
        .iter()
        .all(|gk| gk.gatekeeper_identifier.is_none()));
    for (datagrams, with_id) in [(&avaya_datagrams, false), (&plain_datagrams, true)] {
        for reply in [&datagrams[1], &datagrams[3]] {
            let present = match ras::decode(&reply.payload).unwrap() {
                RasMessage::gatekeeperConfirm(gcf) => gcf.gatekeeper_identifier.is_some(),
                RasMessage::registrationConfirm(rcf) => rcf.gatekeeper_identifier.is_some(),
                other => panic!("{other:?}"),
            };
            assert_eq!(present, with_id);
        }
    }

    if tshark::require_tshark("avaya_endpoints_get_gcf_and_rcf_without_gatekeeper_identifier")
        .is_none()
    {
        return;
    }
    for (name, datagrams, expected) in [
        ("avaya", &avaya_datagrams, None),
        ("plain", &plain_datagrams, Some("rasgk")),
    ] {
        let decoded = tshark_reads(name, datagrams);
        assert_eq!(decoded.frames.len(), 4, "{name}: {}", decoded.stderr);
        for frame in &decoded.frames {
            assert!(frame.malformed().is_empty(), "{name}: {}", frame.text());
        }
        let (gcf, rcf) = (&decoded.frames[1], &decoded.frames[3]);
        assert_eq!(gcf.ras_message().as_deref(), Some("gatekeeperConfirm"));
        assert_eq!(rcf.ras_message().as_deref(), Some("registrationConfirm"));
        assert_eq!(value(gcf, "ip").as_deref(), Some("127.0.1.1"), "{name}");
        // The GCF's and the RCF's own identifier: none to Avaya, "rasgk" to the others.
        assert_eq!(
            value(gcf, "gatekeeperIdentifier").as_deref(),
            expected,
            "{name} GCF\n{}",
            gcf.text()
        );
        let top: Vec<String> = rcf
            .lines
            .iter()
            .filter(|line| line.depth <= 3)
            .filter_map(|line| {
                let (label, value) = line.label_value()?;
                (label == "gatekeeperIdentifier").then(|| value.to_string())
            })
            .collect();
        assert_eq!(
            top,
            expected.map(str::to_string).into_iter().collect::<Vec<_>>(),
            "{name} RCF\n{}",
            rcf.text()
        );
        // The alternate gatekeepers: named by the default topology, with the identifier
        // only for the others.
        let agl = rcf.subtree("alternateGatekeeper");
        assert!(!agl.is_empty(), "{name}: an AGL\n{}", rcf.text());
        let named = tshark::values_of(agl.iter().copied(), "gatekeeperIdentifier");
        match expected {
            None => assert!(named.is_empty(), "{name}: {named:?}"),
            Some(id) => assert!(named.iter().all(|n| n == id) && !named.is_empty()),
        }
        assert_eq!(
            value(rcf, "endpointIdentifier").as_deref(),
            Some("EP00000001")
        );
    }
}
