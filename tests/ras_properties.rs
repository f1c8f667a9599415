//! Property tests of the RAS codec: constructed messages round-trip through ALIGNED PER, and
//! nothing the network can send (random octets, truncations, bit flips and splices of real and
//! constructed messages) makes `decode`, `peek_request_seq_num` or re-encoding panic.

mod support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;

use rasgk::ras::reply::{
    self, AltGkInfo, AlternateGatekeeper, ArjReason, EndpointId, GatekeeperId, GrjReason, Rcf,
    RrjReason, UrjReason,
};
use rasgk::ras::request::{self, Arq, Call, Rrq, Urq, UrqReason};
use rasgk::ras::{
    asn, decode, encode, kind, peek_request_seq_num, request_seq_num, to_json, Alias, MessageKind,
    RasMessage,
};

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

fn seq_strategy() -> impl Strategy<Value = u16> {
    prop_oneof![Just(1u16), Just(65535u16), 1u16..=65535]
}

fn socket_addr_strategy() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<u32>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::V4(Ipv4Addr::from(ip)), port)),
        (any::<[u8; 16]>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port)),
    ]
}

/// A length in `1..=max`, with the edges 1 and `max` drawn often.
fn edge_len(max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![1 => Just(1usize), 1 => Just(max), 3 => 1..=max]
}

/// Any character of the Basic Multilingual Plane that a BMPString alias accepts (below
/// U+FFFE; Rust `char`s are never surrogates), biased towards ASCII.
fn bmp_char() -> impl Strategy<Value = char> {
    prop_oneof![
        2 => prop::char::range(' ', '~'),
        3 => prop::char::ranges(vec!['\0'..='\u{D7FF}', '\u{E000}'..='\u{FFFD}'].into()),
    ]
}

fn bmp_string(max: usize) -> impl Strategy<Value = String> {
    edge_len(max).prop_flat_map(|len| {
        prop::collection::vec(bmp_char(), len).prop_map(|chars| chars.into_iter().collect())
    })
}

fn ia5_string(max: usize) -> impl Strategy<Value = String> {
    edge_len(max).prop_flat_map(|len| {
        prop::collection::vec(0u8..=127, len)
            .prop_map(|bytes| bytes.into_iter().map(char::from).collect())
    })
}

fn digits_string() -> impl Strategy<Value = String> {
    const DIGITS: &[u8] = b"0123456789#*,";
    edge_len(128).prop_flat_map(|len| {
        prop::collection::vec(0..DIGITS.len(), len)
            .prop_map(|ix| ix.into_iter().map(|i| char::from(DIGITS[i])).collect())
    })
}

fn alias_strategy() -> impl Strategy<Value = Alias> {
    prop_oneof![
        digits_string().prop_map(|s| Alias::dialled_digits(&s).expect("valid dialledDigits")),
        bmp_string(256).prop_map(|s| Alias::h323_id(&s).expect("valid h323-ID")),
        ia5_string(512).prop_map(Alias::UrlId),
        ia5_string(512).prop_map(Alias::EmailId),
        socket_addr_strategy().prop_map(Alias::TransportId),
    ]
}

fn aliases_strategy() -> impl Strategy<Value = Vec<Alias>> {
    prop::collection::vec(alias_strategy(), 0..=4)
}

fn gatekeeper_id_strategy() -> impl Strategy<Value = GatekeeperId> {
    bmp_string(128).prop_map(|s| GatekeeperId::new(&s).expect("valid gatekeeperIdentifier"))
}

fn endpoint_id_strategy() -> impl Strategy<Value = EndpointId> {
    bmp_string(128).prop_map(|s| EndpointId::new(&s).expect("valid endpointIdentifier"))
}

fn agl_strategy() -> impl Strategy<Value = Vec<AlternateGatekeeper>> {
    prop::collection::vec(
        (
            socket_addr_strategy(),
            prop::option::of(gatekeeper_id_strategy()),
            0u8..=127,
        )
            .prop_map(
                |(ras_address, gatekeeper_id, priority)| AlternateGatekeeper {
                    ras_address,
                    gatekeeper_id,
                    priority,
                },
            ),
        0..=16,
    )
}

fn ttl_strategy() -> impl Strategy<Value = Option<u32>> {
    prop::option::of(prop_oneof![Just(1u32), Just(u32::MAX), any::<u32>()])
}

fn call_strategy() -> impl Strategy<Value = Call> {
    (any::<u16>(), any::<[u8; 16]>(), any::<[u8; 16]>()).prop_map(
        |(call_reference_value, conference_id, call_id)| Call {
            call_reference_value,
            conference_id,
            call_id,
        },
    )
}

fn band_width_strategy() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(u32::MAX), any::<u32>()]
}

fn addrs_strategy() -> impl Strategy<Value = Vec<SocketAddr>> {
    prop::collection::vec(socket_addr_strategy(), 0..=3)
}

fn grj_reason() -> impl Strategy<Value = GrjReason> {
    prop::sample::select(vec![
        GrjReason::ResourceUnavailable,
        GrjReason::TerminalExcluded,
        GrjReason::InvalidRevision,
        GrjReason::UndefinedReason,
        GrjReason::SecurityDenial,
    ])
}

fn rrj_reason() -> impl Strategy<Value = RrjReason> {
    prop_oneof![
        prop::sample::select(vec![
            RrjReason::DiscoveryRequired,
            RrjReason::InvalidRevision,
            RrjReason::InvalidCallSignalAddress,
            RrjReason::InvalidRasAddress,
            RrjReason::InvalidTerminalType,
            RrjReason::UndefinedReason,
            RrjReason::TransportNotSupported,
            RrjReason::ResourceUnavailable,
            RrjReason::InvalidAlias,
            RrjReason::SecurityDenial,
            RrjReason::FullRegistrationRequired,
        ]),
        aliases_strategy().prop_map(RrjReason::DuplicateAlias),
    ]
}

fn urq_reason() -> impl Strategy<Value = Option<UrqReason>> {
    prop::option::of(prop::sample::select(vec![
        UrqReason::ReregistrationRequired,
        UrqReason::TtlExpired,
        UrqReason::SecurityDenial,
        UrqReason::UndefinedReason,
        UrqReason::Maintenance,
    ]))
}

fn urj_reason() -> impl Strategy<Value = UrjReason> {
    prop::sample::select(vec![
        UrjReason::NotCurrentlyRegistered,
        UrjReason::CallInProgress,
        UrjReason::UndefinedReason,
        UrjReason::PermissionDenied,
        UrjReason::SecurityDenial,
    ])
}

fn arj_reason() -> impl Strategy<Value = ArjReason> {
    prop::sample::select(vec![
        ArjReason::CalledPartyNotRegistered,
        ArjReason::InvalidPermission,
        ArjReason::RequestDenied,
        ArjReason::UndefinedReason,
        ArjReason::CallerNotRegistered,
        ArjReason::InvalidEndpointIdentifier,
        ArjReason::ResourceUnavailable,
        ArjReason::SecurityDenial,
        ArjReason::IncompleteAddress,
        ArjReason::ExceedsCallCapacity,
        ArjReason::NoRouteToDestination,
        ArjReason::UnallocatedNumber,
    ])
}

fn alt_gk_info_strategy() -> impl Strategy<Value = Option<AltGkInfo>> {
    prop::option::of(
        (agl_strategy(), any::<bool>()).prop_map(|(alternates, permanent)| AltGkInfo {
            alternates,
            permanent,
        }),
    )
}

/// A constructed message with the kind and `requestSeqNum` it was built with.
#[derive(Debug, Clone)]
struct Built {
    kind: MessageKind,
    seq: u16,
    message: RasMessage,
}

fn built(kind: MessageKind, seq: u16, message: RasMessage) -> Built {
    Built { kind, seq, message }
}

/// Every constructor of `rasgk::ras::request` and `rasgk::ras::reply`.
fn message_strategy() -> impl Strategy<Value = Built> {
    use MessageKind as K;
    let grq = (
        seq_strategy(),
        socket_addr_strategy(),
        aliases_strategy(),
        prop::option::of(gatekeeper_id_strategy()),
    )
        .prop_map(|(seq, ras, aliases, gk)| {
            built(
                K::Grq,
                seq,
                request::gatekeeper_request(seq, ras, &aliases, gk.as_ref()),
            )
        });
    let rrq = (
        seq_strategy(),
        socket_addr_strategy(),
        socket_addr_strategy(),
        any::<bool>(),
        aliases_strategy(),
        prop::option::of(gatekeeper_id_strategy()),
        ttl_strategy(),
    )
        .prop_map(|(seq, csa, ras, gw, aliases, gk, ttl)| {
            let message = request::registration_request(&Rrq {
                request_seq_num: seq,
                call_signal_address: csa,
                ras_address: ras,
                terminal_type: if gw {
                    request::gateway()
                } else {
                    request::terminal()
                },
                aliases: &aliases,
                gatekeeper_id: gk.as_ref(),
                time_to_live_s: ttl,
            });
            built(K::Rrq, seq, message)
        });
    let keep_alive = (
        seq_strategy(),
        socket_addr_strategy(),
        socket_addr_strategy(),
        endpoint_id_strategy(),
        prop::option::of(gatekeeper_id_strategy()),
        ttl_strategy(),
    )
        .prop_map(|(seq, csa, ras, eid, gk, ttl)| {
            built(
                K::Rrq,
                seq,
                request::keep_alive(seq, csa, ras, &eid, gk.as_ref(), ttl),
            )
        });
    let urq = (
        seq_strategy(),
        addrs_strategy(),
        aliases_strategy(),
        prop::option::of(endpoint_id_strategy()),
        prop::option::of(gatekeeper_id_strategy()),
        urq_reason(),
        agl_strategy(),
    )
        .prop_map(|(seq, csa, aliases, eid, gk, reason, agl)| {
            let message = request::unregistration_request(&Urq {
                request_seq_num: seq,
                call_signal_address: &csa,
                aliases: &aliases,
                endpoint_id: eid.as_ref(),
                gatekeeper_id: gk.as_ref(),
                reason,
                agl: &agl,
            });
            built(K::Urq, seq, message)
        });
    let arq = (
        seq_strategy(),
        endpoint_id_strategy(),
        aliases_strategy(),
        aliases_strategy(),
        call_strategy(),
        band_width_strategy(),
        any::<bool>(),
    )
        .prop_map(|(seq, eid, destination, source, call, bw, answer)| {
            let message = request::admission_request(&Arq {
                request_seq_num: seq,
                endpoint_id: &eid,
                destination: &destination,
                source: &source,
                call,
                band_width: bw,
                answer_call: answer,
            });
            built(K::Arq, seq, message)
        });
    let drq =
        (seq_strategy(), endpoint_id_strategy(), call_strategy()).prop_map(|(seq, eid, call)| {
            built(K::Drq, seq, request::disengage_request(seq, &eid, call))
        });
    let brq = (
        seq_strategy(),
        endpoint_id_strategy(),
        call_strategy(),
        band_width_strategy(),
    )
        .prop_map(|(seq, eid, call, bw)| {
            built(K::Brq, seq, request::bandwidth_request(seq, &eid, call, bw))
        });
    let irr = (
        seq_strategy(),
        endpoint_id_strategy(),
        socket_addr_strategy(),
        socket_addr_strategy(),
        aliases_strategy(),
        any::<bool>(),
    )
        .prop_map(|(seq, eid, ras, csa, aliases, unsolicited)| {
            built(
                K::Irr,
                seq,
                request::info_request_response(seq, &eid, ras, csa, &aliases, unsolicited),
            )
        });
    let gcf = (
        seq_strategy(),
        gatekeeper_id_strategy(),
        socket_addr_strategy(),
    )
        .prop_map(|(seq, gk, ras)| built(K::Gcf, seq, reply::gatekeeper_confirm(seq, &gk, ras)));
    let grj =
        (seq_strategy(), gatekeeper_id_strategy(), grj_reason()).prop_map(|(seq, gk, reason)| {
            built(K::Grj, seq, reply::gatekeeper_reject(seq, &gk, reason))
        });
    let rcf = (
        seq_strategy(),
        gatekeeper_id_strategy(),
        endpoint_id_strategy(),
        addrs_strategy(),
        aliases_strategy(),
        ttl_strategy(),
        agl_strategy(),
    )
        .prop_map(|(seq, gk, eid, csa, aliases, ttl, agl)| {
            let message = reply::registration_confirm(&Rcf {
                request_seq_num: seq,
                gatekeeper_id: &gk,
                endpoint_id: &eid,
                call_signal_address: &csa,
                aliases: &aliases,
                time_to_live_s: ttl,
                agl: &agl,
            });
            built(K::Rcf, seq, message)
        });
    let rrj = (
        seq_strategy(),
        gatekeeper_id_strategy(),
        rrj_reason(),
        alt_gk_info_strategy(),
    )
        .prop_map(|(seq, gk, reason, alt)| {
            built(
                K::Rrj,
                seq,
                reply::registration_reject(seq, &gk, &reason, alt.as_ref()),
            )
        });
    let ucf = seq_strategy().prop_map(|seq| built(K::Ucf, seq, reply::unregistration_confirm(seq)));
    let urj = (seq_strategy(), urj_reason())
        .prop_map(|(seq, reason)| built(K::Urj, seq, reply::unregistration_reject(seq, reason)));
    let acf = (
        seq_strategy(),
        socket_addr_strategy(),
        band_width_strategy(),
        any::<bool>(),
    )
        .prop_map(|(seq, dest, bw, routed)| {
            built(K::Acf, seq, reply::admission_confirm(seq, dest, bw, routed))
        });
    let arj = (seq_strategy(), arj_reason())
        .prop_map(|(seq, reason)| built(K::Arj, seq, reply::admission_reject(seq, reason)));
    let dcf = seq_strategy().prop_map(|seq| built(K::Dcf, seq, reply::disengage_confirm(seq)));
    let bcf = (seq_strategy(), band_width_strategy())
        .prop_map(|(seq, bw)| built(K::Bcf, seq, reply::bandwidth_confirm(seq, bw)));
    let xrs = (seq_strategy(), prop::collection::vec(any::<u8>(), 0..300))
        .prop_map(|(seq, bytes)| built(K::Xrs, seq, reply::unknown_message_response(seq, &bytes)));
    prop_oneof![
        grq.boxed(),
        rrq.boxed(),
        keep_alive.boxed(),
        urq.boxed(),
        arq.boxed(),
        drq.boxed(),
        brq.boxed(),
        irr.boxed(),
        gcf.boxed(),
        grj.boxed(),
        rcf.boxed(),
        rrj.boxed(),
        ucf.boxed(),
        urj.boxed(),
        acf.boxed(),
        arj.boxed(),
        dcf.boxed(),
        bcf.boxed(),
        xrs.boxed(),
    ]
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

fn addr(text: &str) -> SocketAddr {
    text.parse().expect("valid socket address")
}

/// One encoding of each constructor, with its optional parts filled in (aliases of every kind,
/// IPv6, AGLs, reasons carrying data), so that mutations reach deep into the message.
fn constructed_fixtures() -> Vec<(String, Vec<u8>)> {
    let gk = GatekeeperId::new("gk-Zoë☎").unwrap();
    let eid = EndpointId::new("ep-0001").unwrap();
    let aliases = vec![
        Alias::dialled_digits("5000#*,").unwrap(),
        Alias::h323_id("Zoë ☎ alice").unwrap(),
        Alias::UrlId("h323:alice@example.com".into()),
        Alias::EmailId("alice@example.com".into()),
        Alias::TransportId(addr("[2001:db8::1]:1720")),
        Alias::TransportId(addr("10.0.0.1:1720")),
    ];
    let agl: Vec<AlternateGatekeeper> = (0..3)
        .map(|i| AlternateGatekeeper {
            ras_address: if i == 1 {
                addr("[2001:db8::2]:1719")
            } else {
                SocketAddr::new(Ipv4Addr::new(10, 0, 1, i).into(), 1719)
            },
            gatekeeper_id: (i != 2).then(|| gk.clone()),
            priority: i * 40,
        })
        .collect();
    let call = Call {
        call_reference_value: 0x1234,
        conference_id: [0xA5; 16],
        call_id: [0x5A; 16],
    };
    let csa = [addr("10.0.0.2:1720"), addr("[2001:db8::3]:1720")];
    let messages: Vec<(&str, RasMessage)> = vec![
        (
            "GRQ",
            request::gatekeeper_request(1, addr("10.0.0.2:1719"), &aliases, Some(&gk)),
        ),
        (
            "RRQ",
            request::registration_request(&Rrq {
                request_seq_num: 2,
                call_signal_address: csa[0],
                ras_address: addr("[2001:db8::3]:1719"),
                terminal_type: request::gateway(),
                aliases: &aliases,
                gatekeeper_id: Some(&gk),
                time_to_live_s: Some(300),
            }),
        ),
        (
            "RRQ keepAlive",
            request::keep_alive(3, csa[0], addr("10.0.0.2:1719"), &eid, Some(&gk), Some(60)),
        ),
        (
            "URQ",
            request::unregistration_request(&Urq {
                request_seq_num: 4,
                call_signal_address: &csa,
                aliases: &aliases,
                endpoint_id: Some(&eid),
                gatekeeper_id: Some(&gk),
                reason: Some(UrqReason::ReregistrationRequired),
                agl: &agl,
            }),
        ),
        (
            "ARQ",
            request::admission_request(&Arq {
                request_seq_num: 5,
                endpoint_id: &eid,
                destination: &aliases[..2],
                source: &aliases[2..],
                call,
                band_width: 1280,
                answer_call: false,
            }),
        ),
        ("DRQ", request::disengage_request(6, &eid, call)),
        ("BRQ", request::bandwidth_request(7, &eid, call, 640)),
        (
            "IRR",
            request::info_request_response(8, &eid, addr("10.0.0.2:1719"), csa[1], &aliases, true),
        ),
        (
            "GCF",
            reply::gatekeeper_confirm(9, &gk, addr("[2001:db8::9]:1719")),
        ),
        (
            "GRJ",
            reply::gatekeeper_reject(10, &gk, GrjReason::ResourceUnavailable),
        ),
        (
            "RCF",
            reply::registration_confirm(&Rcf {
                request_seq_num: 11,
                gatekeeper_id: &gk,
                endpoint_id: &eid,
                call_signal_address: &csa,
                aliases: &aliases,
                time_to_live_s: Some(u32::MAX),
                agl: &agl,
            }),
        ),
        (
            "RRJ",
            reply::registration_reject(
                12,
                &gk,
                &RrjReason::DuplicateAlias(aliases.clone()),
                Some(&AltGkInfo {
                    alternates: agl.clone(),
                    permanent: true,
                }),
            ),
        ),
        ("UCF", reply::unregistration_confirm(13)),
        (
            "URJ",
            reply::unregistration_reject(14, UrjReason::CallInProgress),
        ),
        (
            "ACF",
            reply::admission_confirm(15, addr("[2001:db8::4]:1720"), 1280, true),
        ),
        (
            "ARJ",
            reply::admission_reject(16, ArjReason::CalledPartyNotRegistered),
        ),
        ("DCF", reply::disengage_confirm(17)),
        ("BCF", reply::bandwidth_confirm(18, 640)),
        (
            "XRS",
            reply::unknown_message_response(19, &[0x0e, 0x40, 0x00, 0x13, 0xff, 0x00]),
        ),
    ];
    messages
        .into_iter()
        .map(|(name, message)| {
            let bytes = encode(&message).unwrap_or_else(|e| panic!("{name} must encode: {e}"));
            (format!("constructed {name}"), bytes)
        })
        .collect()
}

/// Every distinct UDP payload of the real captures, named by file and frame; empty (after
/// saying why) when the shared folder is missing.
fn capture_fixtures() -> &'static [(String, Vec<u8>)] {
    static FIXTURES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let Some(dir) = support::captures::dir("real capture fixtures") else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("readable captures folder")
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|ext| ext == "pcap"))
            .collect();
        files.sort();
        if files.is_empty() {
            eprintln!("skipping real captures: no *.pcap in {}", dir.display());
        }
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for file in files {
            let capture = rasgk::pcap::read_file(&file)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            for datagram in capture.datagrams {
                if seen.insert(datagram.payload.clone()) {
                    out.push((format!("{name} frame {}", datagram.frame), datagram.payload));
                }
            }
        }
        out
    })
}

fn all_fixtures() -> &'static [(String, Vec<u8>)] {
    static ALL: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = constructed_fixtures();
        all.extend(capture_fixtures().iter().cloned());
        all
    })
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The text of a caught panic.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// Decodes and peeks `bytes`; with `reencode`, also re-encodes what decodes and checks that the
/// new octets decode to the same value. Returns what went wrong (panics included) as text.
fn check_input(bytes: &[u8], reencode: bool) -> Result<(), String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        let _ = peek_request_seq_num(bytes);
        let Ok(message) = decode(bytes) else {
            return Ok(());
        };
        let _ = kind(&message);
        let _ = request_seq_num(&message);
        check_json(&message)?;
        if !reencode {
            return Ok(());
        }
        // A value outside some constraint may refuse to encode; that is not a bug.
        let Ok(again) = encode(&message) else {
            return Ok(());
        };
        match decode(&again) {
            Ok(decoded) if decoded == message => Ok(()),
            Ok(_) => Err(format!(
                "re-encoding {} decodes to a different value",
                hex(&again)
            )),
            Err(e) => Err(format!("re-encoding {} does not decode: {e}", hex(&again))),
        }
    }));
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("{e}; input {}", hex(bytes))),
        Err(payload) => Err(format!(
            "panic {:?}; input {}",
            panic_text(payload.as_ref()),
            hex(bytes)
        )),
    }
}

/// What `rasgk decode --json` prints of a decoded message is JSON: a one-member object named
/// after the message's ASN.1 alternative, that survives printing and parsing unchanged.
fn check_json(message: &RasMessage) -> Result<(), String> {
    let value = to_json(message);
    let name = kind(message).asn1_name();
    let members: Vec<&String> = value
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    if members != [name] {
        return Err(format!(
            "JSON of a {name} is not {{\"{name}\": …}}: {value}"
        ));
    }
    let text = value.to_string();
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(again) if again == value => Ok(()),
        Ok(_) => Err(format!("JSON of a {name} reads back differently: {text}")),
        Err(e) => Err(format!("JSON of a {name} does not parse ({e}): {text}")),
    }
}

/// One input of the exhaustive mutation tests.
struct Fixture<'a> {
    name: &'a str,
    bytes: &'a [u8],
    /// Also re-encode the mutations that decode (see [`check_input`]).
    reencode: bool,
}

/// Every prefix and every single-bit flip of a fixture; the failures, described.
fn mutate_exhaustively(fixture: &Fixture<'_>, failures: &mut Vec<String>) -> usize {
    let Fixture {
        name,
        bytes,
        reencode,
    } = *fixture;
    let mut tried = 0;
    for len in 0..=bytes.len() {
        tried += 1;
        if let Err(e) = check_input(&bytes[..len], reencode) {
            failures.push(format!("{name}, prefix of {len} octets: {e}"));
        }
    }
    let mut flipped = bytes.to_vec();
    for bit in 0..bytes.len() * 8 {
        let mask = 0x80u8 >> (bit % 8);
        flipped[bit / 8] ^= mask;
        tried += 1;
        if let Err(e) = check_input(&flipped, reencode) {
            failures.push(format!("{name}, bit {bit} flipped: {e}"));
        }
        flipped[bit / 8] ^= mask;
    }
    tried
}

/// Mutates every fixture exhaustively, on all cores, and fails listing the first failures.
fn run_exhaustive(fixtures: &[Fixture<'_>]) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    // Interleave the fixtures over the threads so that each gets a similar mix.
    let (tried, failures) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    let tried: usize = fixtures
                        .iter()
                        .skip(t)
                        .step_by(threads)
                        .map(|fixture| mutate_exhaustively(fixture, &mut failures))
                        .sum();
                    (tried, failures)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread"))
            .fold((0, Vec::new()), |(n, mut all), (t, f)| {
                all.extend(f);
                (n + t, all)
            })
    });
    let reencoded = fixtures.iter().filter(|f| f.reencode).count();
    eprintln!(
        "{} fixtures ({reencoded} with re-encoding), {tried} mutated inputs, {} failures",
        fixtures.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} mutated inputs failed; the first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `bytes` with its `requestSeqNum` octets zeroed, when they can be found for sure: the first
/// two octets (within the first eight) holding `seq - 1` such that zeroing them makes the
/// message decode with `requestSeqNum` 1. Payloads that differ only there take the same path
/// through the decoder.
fn without_seq(bytes: &[u8]) -> Vec<u8> {
    let mut template = bytes.to_vec();
    let Ok(message) = decode(bytes) else {
        return template;
    };
    let raw = request_seq_num(&message).wrapping_sub(1).to_be_bytes();
    for at in 0..bytes.len().min(8).saturating_sub(1) {
        if bytes[at..at + 2] != raw {
            continue;
        }
        let mut candidate = bytes.to_vec();
        candidate[at] = 0;
        candidate[at + 1] = 0;
        if decode(&candidate).is_ok_and(|m| request_seq_num(&m) == 1) {
            template = candidate;
            break;
        }
    }
    template
}

/// `cases` cases, and no failure persistence: a failing case is printed with its octets, and
/// an integration test has no `src/` beside it for proptest's regression files.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Constructed messages round-trip
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn constructed_messages_round_trip(built in message_strategy()) {
        let Built { kind: expected_kind, seq, message } = built;
        prop_assert_eq!(kind(&message), expected_kind);
        prop_assert_eq!(request_seq_num(&message), seq);
        let bytes = encode(&message).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let decoded = decode(&bytes)
            .map_err(|e| TestCaseError::fail(format!("{e}; octets {}", hex(&bytes))))?;
        prop_assert_eq!(&decoded, &message, "octets {}", hex(&bytes));
        prop_assert_eq!(kind(&decoded), expected_kind);
        prop_assert_eq!(request_seq_num(&decoded), seq);
        // Every constructor leaves out whatever precedes requestSeqNum (IRR: nonStandardData),
        // so the number can be read from the first octets.
        prop_assert_eq!(peek_request_seq_num(&bytes), Some(seq), "octets {}", hex(&bytes));
        // Encoding is deterministic.
        prop_assert_eq!(encode(&decoded).ok(), Some(bytes));
        check_json(&decoded).map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Arbitrary octets
// ---------------------------------------------------------------------------------------------

/// Random octets, half of them starting with a plausible root CHOICE index (extension bit
/// clear, index 0..=24) so that the decoder gets past the first octet.
fn datagram_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..600),
        (0u8..25, 0u8..4, prop::collection::vec(any::<u8>(), 0..600)).prop_map(
            |(index, low, mut rest)| {
                rest.insert(0, (index << 2) | low);
                rest
            }
        ),
    ]
}

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn arbitrary_octets_never_panic(bytes in datagram_strategy()) {
        // No panic in peek, decode or re-encoding; what decodes re-encodes to the same value.
        check_input(&bytes, true).map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Every truncation and every bit flip
// ---------------------------------------------------------------------------------------------

#[test]
fn truncations_and_bit_flips_of_constructed_messages_never_panic() {
    let constructed = constructed_fixtures();
    let fixtures: Vec<Fixture<'_>> = constructed
        .iter()
        .map(|(name, bytes)| Fixture {
            name,
            bytes,
            reencode: true,
        })
        .collect();
    run_exhaustive(&fixtures);
}

#[test]
fn truncations_and_bit_flips_of_captured_messages_never_panic() {
    let fixtures = capture_fixtures();
    if fixtures.is_empty() {
        return;
    }
    let decoded = fixtures
        .iter()
        .filter(|(_, bytes)| decode(bytes).is_ok())
        .count();
    eprintln!(
        "{} distinct captured payloads, {decoded} decode unmutated",
        fixtures.len()
    );
    for (name, bytes) in fixtures {
        if let Err(e) = decode(bytes) {
            eprintln!("{name} does not decode: {e}");
        }
    }
    // Every payload is decoded in every mutation; re-encoding (three times the cost) is done
    // for one payload of each group that differs only in requestSeqNum.
    let mut templates = std::collections::HashSet::new();
    let fixtures: Vec<Fixture<'_>> = fixtures
        .iter()
        .map(|(name, bytes)| Fixture {
            name,
            bytes,
            reencode: templates.insert(without_seq(bytes)),
        })
        .collect();
    run_exhaustive(&fixtures);
}

// ---------------------------------------------------------------------------------------------
// 4. Splices
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn splices_of_two_fixtures_never_panic(
        a in any::<Index>(),
        b in any::<Index>(),
        cut_a in any::<Index>(),
        cut_b in any::<Index>(),
    ) {
        let fixtures = all_fixtures();
        let (_, first) = &fixtures[a.index(fixtures.len())];
        let (_, second) = &fixtures[b.index(fixtures.len())];
        let prefix = &first[..cut_a.index(first.len() + 1)];
        let suffix = &second[cut_b.index(second.len() + 1)..];
        let spliced = [prefix, suffix].concat();
        check_input(&spliced, true).map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------------------------
// BMPStrings of any UTF-16 code units, as JSON
// ---------------------------------------------------------------------------------------------

/// UTF-16 code units of any kind: ASCII, the rest of the BMP, surrogate pairs, and lone
/// surrogates of either half.
fn utf16_units() -> impl Strategy<Value = Vec<u16>> {
    let unit = prop_oneof![
        3 => (0x20u16..0x7F).prop_map(|u| vec![u]),
        2 => (0x80u16..0xD800).prop_map(|u| vec![u]),
        2 => (0x10000u32..=0x10FFFF).prop_map(|c| {
            let c = char::from_u32(c).unwrap_or('\u{1F600}');
            c.encode_utf16(&mut [0; 2]).to_vec()
        }),
        1 => (0xD800u16..0xE000).prop_map(|u| vec![u]),
    ];
    prop::collection::vec(unit, 1..40).prop_map(|units| units.concat())
}

fn bmp_of_units(units: &[u16]) -> rasn::types::BmpString {
    let octets: Vec<u8> = units.iter().flat_map(|u| u.to_be_bytes()).collect();
    rasn::types::BmpString::try_from(&octets[..]).expect("every unit below U+FFFE")
}

proptest! {
    #![proptest_config(config(512))]

    /// A GRQ whose h323-ID alias and `gatekeeperIdentifier` carry arbitrary UTF-16 units goes
    /// through the wire and comes out of the JSON as their UTF-16 text, each unpaired
    /// surrogate a U+FFFD and counted.
    #[test]
    fn bmp_strings_of_any_units_render_as_their_utf16_text(units in utf16_units()) {
        let bmp = bmp_of_units(&units);
        let mut message = request::gatekeeper_request(9, addr("127.1.0.5:40001"), &[], None);
        if let RasMessage::gatekeeperRequest(grq) = &mut message {
            grq.endpoint_alias = Some(vec![asn::AliasAddress::h323_ID(bmp.clone())]);
            grq.gatekeeper_identifier = Some(asn::GatekeeperIdentifier(bmp));
        }
        let bytes = encode(&message).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let decoded = decode(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let rendered = rasgk::ras::json::render(&decoded);
        let expected = String::from_utf16_lossy(&units);
        let lone = char::decode_utf16(units.iter().copied()).filter(Result::is_err).count();
        let grq = &rendered.value["gatekeeperRequest"];
        prop_assert_eq!(grq["gatekeeperIdentifier"].as_str(), Some(expected.as_str()));
        prop_assert_eq!(grq["endpointAlias"][0]["h323-ID"].as_str(), Some(expected.as_str()));
        prop_assert_eq!(rendered.unpaired_surrogates, 2 * lone);
        check_json(&decoded).map_err(TestCaseError::fail)?;
    }
}
