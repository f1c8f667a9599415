//! IPv6 in the core, in virtual time (docs/rules.md §17): a phone is served over the family it
//! used, and only by the C-LANs that have an address of that family — GCF, RRQ, AGL, TTS
//! sockets, gatekeeper-sent URQs and routed ACFs alike — while a dual-stack C-LAN keeps one
//! place count for both. Every address sent to an IPv6 phone is an `ip6Address`, and an IPv4
//! phone never sees one.

mod support;

use std::net::SocketAddr;

use rasgk::gatekeeper::Command;
use rasgk::phone::{Answer, Phone};
use rasgk::ras::{self, asn};
use support::core::CoreLab;

/// Region 1 IPv4 (one C-LAN), region 2 IPv6 (one C-LAN), region 3 both (a dual-stack C-LAN
/// and an IPv6-only one); 2 and 3 linked directly, 1 and 3 too. A discovery address of each
/// family.
const TOPOLOGY: &str = r#"
[gatekeeper]
discovery = "127.0.0.1:1719"
discovery6 = "[fd00::100]:1719"
sockets = "tcp"
call_signalling = "routed"
seed = 6

[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[region]]
id = 2
networks = ["fd00:0:2::/48"]
[[region]]
id = 3
networks = ["127.3.0.0/16", "fd00:0:3::/48"]
[[link]]
regions = [2, 3]
kind = "direct"
[[link]]
regions = [1, 3]
kind = "direct"

[[clan]]
name = "v4"
region = 1
address = "127.0.1.1:1719"
[[clan]]
name = "v6"
region = 2
address6 = "[fd00::21]:1719"
[[clan]]
name = "dual"
region = 3
address = "127.0.1.31:1719"
address6 = "[fd00::31]:1719"
max_sockets = 2
[[clan]]
name = "v6-b"
region = 3
address6 = "[fd00::32]:1719"
priority = 2

[[tts]]
aliases = ["5*"]
"#;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// Every TransportAddress in a message, as the alternatives it used.
fn transport_kinds(message: &ras::RasMessage) -> Vec<&'static str> {
    let json = ras::to_json(message).to_string();
    let mut kinds = Vec::new();
    for kind in ["\"ipAddress\"", "\"ip6Address\""] {
        for _ in json.matches(kind) {
            kinds.push(kind.trim_matches('"'));
        }
    }
    kinds
}

/// GRQ at the discovery address of the phone's family, RRQ where the GCF says: the GCF's
/// and the RCF's messages.
fn register(lab: &mut CoreLab, phone: &mut Phone) -> (ras::RasMessage, ras::RasMessage) {
    let discovery = if phone.ras_address.is_ipv6() {
        addr("[fd00::100]:1719")
    } else {
        addr("127.0.0.1:1719")
    };
    let grq = phone.grq();
    let gcf = lab.ask_message(discovery, phone, &grq);
    let clan = match Answer::from_message(&gcf) {
        Answer::Gcf {
            ras_address: Some(clan),
            ..
        } => clan,
        other => panic!("expected GCF, got {other:?}"),
    };
    let rrq = phone.rrq();
    let rcf = lab.ask_message(clan, phone, &rrq);
    (gcf, rcf)
}

fn rcf_parts(rcf: &ras::RasMessage) -> (SocketAddr, Vec<SocketAddr>) {
    match Answer::from_message(rcf) {
        Answer::Rcf {
            call_signal_address: Some(signal),
            agl,
            ..
        } => (signal, agl),
        other => panic!("expected RCF, got {other:?}"),
    }
}

#[test]
fn an_ipv6_phone_is_served_only_by_clans_with_an_ipv6_address() {
    let mut lab = CoreLab::with_config(TOPOLOGY, "ipv6.toml");
    // A phone of the IPv6 region: GCF and RCF name IPv6 addresses only.
    let mut phone = Phone::extension(6201, addr("[fd00:0:2::1:1]:1719"));
    let (gcf, rcf) = register(&mut lab, &mut phone);
    match Answer::from_message(&gcf) {
        Answer::Gcf { ras_address, .. } => {
            assert_eq!(ras_address, Some(addr("[fd00::21]:1719")))
        }
        other => panic!("{other:?}"),
    }
    assert!(transport_kinds(&gcf).contains(&"ip6Address"));
    assert!(transport_kinds(&gcf).iter().all(|&k| k == "ip6Address"));
    let (signal, agl) = rcf_parts(&rcf);
    assert_eq!(
        signal,
        addr("[fd00::21]:1720"),
        "the C-LAN's IPv6 signalling address"
    );
    // Its AGL: its own region's, then region 3's C-LANs that have IPv6 (never region 1's).
    assert!(!agl.is_empty());
    assert!(agl.iter().all(SocketAddr::is_ipv6), "{agl:?}");
    assert!(agl.contains(&addr("[fd00::31]:1719")) && agl.contains(&addr("[fd00::32]:1719")));
    assert!(transport_kinds(&rcf).iter().all(|&k| k == "ip6Address"));

    // A phone of the IPv4 region: no IPv6 entry anywhere, and region 3's IPv6-only C-LAN
    // is not in its AGL.
    let mut phone = Phone::extension(6101, addr("127.1.0.1:1719"));
    let (gcf, rcf) = register(&mut lab, &mut phone);
    assert!(transport_kinds(&rcf).contains(&"ipAddress"));
    assert!(transport_kinds(&gcf).iter().all(|&k| k == "ipAddress"));
    assert!(transport_kinds(&rcf).iter().all(|&k| k == "ipAddress"));
    let (signal, agl) = rcf_parts(&rcf);
    assert_eq!(signal, addr("127.0.1.1:1720"));
    assert_eq!(agl, [addr("127.0.1.1:1719"), addr("127.0.1.31:1719")]);
}

#[test]
fn a_dual_stack_clan_keeps_one_place_count_for_both_families() {
    let mut lab = CoreLab::with_config(TOPOLOGY, "ipv6.toml");
    // Region 3: an IPv4 phone and an IPv6 phone both go to the dual-stack C-LAN (priority
    // 1); its cap of 2 is then full, so the next IPv6 phone goes to the IPv6-only one and
    // the next IPv4 phone to region 1's (linked) C-LAN.
    let mut v4 = Phone::extension(6301, addr("127.3.0.1:1719"));
    let mut v6 = Phone::extension(6302, addr("[fd00:0:3::1:1]:1719"));
    let (_, rcf4) = register(&mut lab, &mut v4);
    let (_, rcf6) = register(&mut lab, &mut v6);
    assert_eq!(rcf_parts(&rcf4).0, addr("127.0.1.31:1720"));
    assert_eq!(rcf_parts(&rcf6).0, addr("[fd00::31]:1720"));
    let dual = &lab.gatekeeper.clans()[2];
    assert_eq!((dual.name.as_str(), dual.sockets), ("dual", 2));
    let mut v6_more = Phone::extension(6303, addr("[fd00:0:3::1:2]:1719"));
    let (gcf, _) = register(&mut lab, &mut v6_more);
    assert!(matches!(
        Answer::from_message(&gcf),
        Answer::Gcf { ras_address: Some(a), .. } if a == addr("[fd00::32]:1719")
    ));
    let mut v4_more = Phone::extension(6304, addr("127.3.0.2:1719"));
    let (gcf, _) = register(&mut lab, &mut v4_more);
    assert!(matches!(
        Answer::from_message(&gcf),
        Answer::Gcf { ras_address: Some(a), .. } if a == addr("127.0.1.1:1719")
    ));
    // The view names the dual-stack C-LAN once, with both of its signalling addresses
    // served.
    let names: Vec<String> = lab.gatekeeper.clans().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["v4", "v6", "dual", "v6-b"]);
}

#[test]
fn tts_sockets_urqs_and_routed_acfs_use_the_phones_family() {
    let mut lab = CoreLab::with_config(TOPOLOGY, "ipv6.toml");
    // A TTS phone of the IPv6 region: the gatekeeper connects from the C-LAN's IPv6
    // address.
    let mut tts = Phone::extension(5201, addr("[fd00:0:2::2:1]:1719"));
    register(&mut lab, &mut tts);
    let connects: Vec<Command> = lab
        .gatekeeper
        .take_commands()
        .into_iter()
        .filter(|c| matches!(c, Command::Connect { .. }))
        .collect();
    match connects.as_slice() {
        [Command::Connect { from, to, .. }] => {
            assert_eq!(from.to_string(), "fd00::21");
            assert_eq!(*to, tts.call_signal_address);
        }
        other => panic!("one connect expected, got {other:?}"),
    }
    // A routed ACF for an IPv6 caller names its C-LAN's IPv6 signalling address.
    let mut caller = Phone::extension(6202, addr("[fd00:0:2::2:2]:1719"));
    register(&mut lab, &mut caller);
    let arq = caller.arq("5201", [7; 16]).unwrap();
    let acf = lab.ask_message(addr("[fd00::21]:1719"), &mut caller, &arq);
    match &acf {
        ras::RasMessage::admissionConfirm(acf) => {
            assert!(matches!(
                acf.dest_call_signal_address,
                asn::TransportAddress::ip6Address(_)
            ));
            assert_eq!(
                ras::socket_addr(&acf.dest_call_signal_address),
                Some(addr("[fd00::21]:1720"))
            );
        }
        other => panic!("expected ACF, got {other:?}"),
    }
    // Its C-LAN out of service: the URQ leaves from the C-LAN's IPv6 address, to the phone,
    // with an AGL of IPv6 addresses.
    let v6 = lab.gatekeeper.clan_by_name("v6").unwrap();
    let urqs = lab.gatekeeper.set_in_service(lab.now, v6, false);
    assert!(!urqs.is_empty());
    for urq in &urqs {
        assert_eq!(urq.local, addr("[fd00::21]:1719"));
        assert!(urq.to.is_ipv6());
        let message = ras::decode(&urq.payload).unwrap();
        assert!(transport_kinds(&message).iter().all(|&k| k == "ip6Address"));
    }
}
