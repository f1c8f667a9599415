//! Integration over real UDP on loopback: `rasgk serve` started from a fixture config, phones
//! bound to source addresses of their regions (127.1.x.x, 127.2.x.x, 127.3.x.x) running
//! GRQ → GCF → RRQ at the named C-LAN → RCF; the loads the admin port reports must be the
//! ones the rules give. The phones' transcript is then written as a pcap and read by tshark.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use rasgk::phone::{Answer, Phone};
use support::server::{write_transcript, Served, UdpPhone};
use support::tshark;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn fixture(name: &str) -> String {
    format!("{}/fixtures/lab/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn phone(region: u8, n: u8) -> UdpPhone {
    let extension = 40_000 + u32::from(region) * 1000 + u32::from(n);
    UdpPhone::bind(Phone::extension(
        extension,
        SocketAddr::from(([127, region, 0, n], 0)),
    ))
}

/// `/api/clans` as name → (sockets, reserved).
fn loads(served: &Served) -> BTreeMap<String, (u64, u64)> {
    let clans = served.get_json("/api/clans");
    clans
        .as_array()
        .expect("a list")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                (
                    c["sockets"].as_u64().unwrap(),
                    c["reserved"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

#[test]
fn phones_of_three_regions_fill_the_clans_in_rule_order() {
    let discovery = addr("127.0.9.1:1719");
    let served = Served::start(&["--config", &fixture("udp.toml")], addr("127.0.9.1:7000"));
    let name = |address: SocketAddr| -> &'static str {
        match address.to_string().as_str() {
            "127.0.9.11:1719" => "r1-a",
            "127.0.9.12:1719" => "r1-b",
            "127.0.9.13:1719" => "r1-c",
            "127.0.9.21:1719" => "r2",
            "127.0.9.31:1719" => "r3",
            other => panic!("{other} is not a C-LAN of udp.toml"),
        }
    };
    let mut phones = Vec::new();
    let mut placed = Vec::new();
    let mut agls = Vec::new();
    // 10 phones of region 1, 3 of region 3, 2 of region 2, 1 more of region 1.
    let arrivals = [(1u8, 10u8), (3, 3), (2, 2), (1, 1)];
    for (region, count) in arrivals {
        for _ in 0..count {
            let n = phones.len() as u8 + 1;
            let mut p = phone(region, n);
            let outcome = match p.register(discovery) {
                (
                    Answer::Gcf {
                        ras_address: Some(clan),
                        ..
                    },
                    Some(Answer::Rcf { agl, .. }),
                ) => {
                    agls.push((region, agl));
                    name(clan).to_string()
                }
                (Answer::Grj { reason, .. }, None) => format!("GRJ {reason}"),
                other => panic!("unexpected {other:?}"),
            };
            placed.push((region, outcome));
            phones.push(p);
        }
    }
    let expect = [
        // Region 1: least loaded of priority 1 (ties by order), then priority 2, then the
        // direct region 2.
        (1, "r1-a"),
        (1, "r1-b"),
        (1, "r1-a"),
        (1, "r1-b"),
        (1, "r1-a"),
        (1, "r1-b"),
        (1, "r1-c"),
        (1, "r1-c"),
        (1, "r2"),
        (1, "r2"),
        // Region 3: home, then its direct region 2 (region 1 is only indirect for it).
        (3, "r3"),
        (3, "r3"),
        (3, "r2"),
        // Region 2: home takes the last place, then direct 1 and 3 are full: busy.
        (2, "r2"),
        (2, "GRJ resourceUnavailable"),
        // Region 1: home, direct and indirect all full.
        (1, "GRJ resourceUnavailable"),
    ];
    let expect: Vec<(u8, String)> = expect.iter().map(|&(r, n)| (r, n.to_string())).collect();
    assert_eq!(placed, expect);

    let expected_loads: BTreeMap<String, (u64, u64)> =
        [("r1-a", 3), ("r1-b", 3), ("r1-c", 2), ("r2", 4), ("r3", 2)]
            .into_iter()
            .map(|(n, s)| (n.to_string(), (s, 0)))
            .collect();
    assert_eq!(loads(&served), expected_loads, "/api/clans");

    // The first phone's AGL: its home C-LANs (after its own socket), then r2, then r3.
    let (_, first) = &agls[0];
    let groups: Vec<&str> = first.iter().map(|&a| name(a)).collect();
    assert_eq!(groups.len(), 5, "{groups:?}");
    assert!(
        groups[..3].iter().all(|n| n.starts_with("r1-")),
        "{groups:?}"
    );
    assert_eq!(&groups[3..], ["r2", "r3"]);

    // /api/registrations: one per registered phone, its socket where its RRQ went.
    let registrations = served.get_json("/api/registrations");
    let registrations = registrations.as_array().unwrap();
    assert_eq!(registrations.len(), 14);
    for (p, (region, outcome)) in phones.iter().zip(&placed) {
        let ras = p.phone.ras_address.to_string();
        let entry = registrations
            .iter()
            .find(|r| r["ras_address"] == ras.as_str());
        if outcome.starts_with("GRJ") {
            assert!(entry.is_none());
            continue;
        }
        let entry = entry.unwrap_or_else(|| panic!("{ras} is not in /api/registrations"));
        assert_eq!(entry["clan"], outcome.as_str());
        assert_eq!(entry["region"], u64::from(*region));
        assert_eq!(entry["tts"], false);
        assert!(entry["endpoint_id"].as_str().unwrap().starts_with("EP"));
        assert_eq!(entry["aliases"].as_array().unwrap().len(), 1);
    }

    // One phone leaves: its socket is freed at once.
    let leaving = &mut phones[0];
    let urq = leaving.phone.urq();
    assert!(matches!(
        leaving.ask(addr("127.0.9.11:1719"), &urq),
        Answer::Ucf { .. }
    ));
    assert_eq!(loads(&served)["r1-a"], (2, 0));

    // The transcript, read by Wireshark's dissector: nothing malformed, and the fields say
    // what the phones read.
    let Some(_) = tshark::require_tshark("phones_of_three_regions_fill_the_clans_in_rule_order")
    else {
        return;
    };
    let transcript: Vec<_> = phones.iter().flat_map(|p| p.transcript.clone()).collect();
    let dir = std::env::temp_dir().join(format!("rasgk-udp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("transcript.pcap");
    write_transcript(&pcap, &transcript);
    let decoded = tshark::decode(&pcap, &[]);
    assert_eq!(
        decoded.frames.len(),
        transcript.len(),
        "{}",
        decoded.command
    );
    let mut kinds = BTreeMap::<String, usize>::new();
    let mut agl_entries = 0;
    for frame in &decoded.frames {
        assert!(
            frame.malformed().is_empty(),
            "frame {}: {:?}",
            frame.number,
            frame.malformed()
        );
        let kind = frame
            .ras_message()
            .unwrap_or_else(|| panic!("frame {} is not RAS", frame.number));
        let kind = rasgk::ras::MessageKind::ALL
            .into_iter()
            .find(|k| k.asn1_name() == kind)
            .map_or(kind, |k| k.short_name().to_string());
        *kinds.entry(kind.clone()).or_default() += 1;
        if kind == "GCF" {
            assert_eq!(
                frame.value("gatekeeperIdentifier").as_deref(),
                Some("rasgk")
            );
        }
        if kind == "RCF" {
            let entries = frame.values("needToRegister");
            assert!(
                entries.iter().all(|v| v == "True"),
                "frame {}",
                frame.number
            );
            agl_entries += entries.len();
            assert!(frame.value("endpointIdentifier").unwrap().starts_with("EP"));
        }
    }
    let read: usize = agls.iter().map(|(_, agl)| agl.len()).sum();
    assert_eq!(
        agl_entries, read,
        "tshark sees the AGL entries the phones read"
    );
    assert_eq!(kinds.get("GRQ"), Some(&16));
    assert_eq!(kinds.get("GCF"), Some(&14));
    assert_eq!(kinds.get("GRJ"), Some(&2));
    assert_eq!(kinds.get("RRQ"), Some(&14));
    assert_eq!(kinds.get("RCF"), Some(&14));
    assert_eq!(kinds.get("URQ"), Some(&1));
    assert_eq!(kinds.get("UCF"), Some(&1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_phones_balance_within_one_socket() {
    let discovery = addr("127.0.10.1:1719");
    let served = Served::start(
        &["--config", &fixture("udp-concurrent.toml")],
        addr("127.0.10.1:7000"),
    );
    // 8 threads of 25 phones each register at the same time: 200 phones, half TTS.
    let threads: Vec<_> = (0..8u8)
        .map(|t| {
            std::thread::spawn(move || {
                (0..25u8)
                    .map(|i| {
                        let mut p = UdpPhone::bind(Phone::extension(
                            50_000 + u32::from(t) * 100 + u32::from(i),
                            SocketAddr::from(([127, 1, t + 1, i + 1], 0)),
                        ));
                        match p.register(discovery) {
                            (_, Some(Answer::Rcf { .. })) => p.phone.ras_address,
                            other => panic!("unexpected {other:?}"),
                        }
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let registered: Vec<SocketAddr> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("a phone thread"))
        .collect();
    assert_eq!(registered.len(), 200);
    let loads = loads(&served);
    let sockets: Vec<u64> = loads
        .values()
        .map(|&(s, r)| {
            assert_eq!(r, 0, "every reservation became a socket or was released");
            s
        })
        .collect();
    assert_eq!(sockets.iter().sum::<u64>(), 200, "{loads:?}");
    let registrations = served.get_json("/api/registrations");
    let registrations = registrations.as_array().unwrap();
    assert_eq!(registrations.len(), 200);
    let tts = registrations.iter().filter(|r| r["tts"] == true).count();
    let odd = (0..8u32)
        .flat_map(|t| (0..25u32).map(move |i| 50_000 + t * 100 + i))
        .filter(|e| e % 2 == 1)
        .count();
    assert_eq!(tts, odd, "extensions ending in an odd digit are TTS");
    assert!(registrations.iter().all(|r| !r["clan"].is_null()));
    // Non-TTS phones: GCF choice keeps loads (sockets + reservations) within one of each
    // other; TTS phones go to the least loaded AGL entry. Together: within one.
    let (min, max) = (sockets.iter().min().unwrap(), sockets.iter().max().unwrap());
    assert!(max - min <= 1, "unbalanced: {loads:?}");
}

#[test]
fn a_multicast_grq_is_answered_from_the_discovery_address() {
    use socket2::{Domain, Protocol, Socket, Type};
    let _served = Served::start(
        &["--config", &fixture("udp-multicast.toml")],
        addr("127.0.11.1:7000"),
    );
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
    socket.bind(&addr("127.1.0.77:0").into()).unwrap();
    // Loopback only: the group is reached through lo, never another interface.
    socket
        .set_multicast_if_v4(&std::net::Ipv4Addr::new(127, 0, 0, 1))
        .unwrap();
    socket.set_multicast_loop_v4(true).unwrap();
    // TTL 0: the datagram never leaves this host.
    socket.set_multicast_ttl_v4(0).unwrap();
    let socket: std::net::UdpSocket = socket.into();
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let mut p = Phone::extension(40_777, socket.local_addr().unwrap());
    let mut buffer = [0u8; 2048];
    for _attempt in 0..4 {
        let grq = p.grq();
        socket.send_to(&grq, addr("224.0.1.41:1718")).unwrap();
        if let Ok((len, from)) = socket.recv_from(&mut buffer) {
            assert_eq!(from, addr("127.0.11.1:1719"), "answered from discovery");
            assert_eq!(
                Answer::read(&buffer[..len]).unwrap(),
                Answer::Gcf {
                    seq: p.last_seq(),
                    ras_address: Some(addr("127.0.11.11:1719"))
                }
            );
            return;
        }
    }
    panic!("no answer to a multicast GRQ");
}
