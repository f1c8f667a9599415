//! H.235 the way a real endpoint does it: the GRQ and RRQ of an H323Plus 1.28 endpoint with
//! password `s3cret` (`shared/captures/h323plus_password.ras.pcap`) replayed into the core at
//! the capture's time. Its GRQ offers pwdHash, RADIUS and a key exchange with HMAC-SHA1-96,
//! CAT and MD5; its RRQ carries a CAT ClearToken, an H.235.1 procedure I nestedcryptoToken
//! and an MD5 cryptoEPPwdHash. The GCF must select one of them, the RRQ be accepted under
//! procedure I (and under MD5 alone when that is all it carries), refused with another
//! secret, and the RCF carry what procedure I requires — read back by tshark, the hash
//! checked with the HMAC computed here apart from rasgk's.
//!
//! Addresses: the core only (no sockets), at the capture's own 127.0.0.1 / 127.0.1.1.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use rasgk::gatekeeper::{Gatekeeper, Transmit};
use rasgk::pcap::{self, Datagram};
use rasgk::ras::{self, asn, h235_1, RasMessage};
use sha1::{Digest, Sha1};
use support::{captures, tshark};

const CAPTURE: &str = "h323plus_password.ras.pcap";
/// The capture's GRQ went to the discovery address, its RRQ to the C-LAN.
const DISCOVERY: &str = "127.0.0.1:1719";
const CLAN: &str = "127.0.1.1:1719";
/// The endpoint's user name (its h323-ID), which its tokens name.
const USER: &str = "h323plus-ep";

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// The capture's GRQ and RRQ, or `None` (said why) when the shared captures are absent.
fn captured(test: &str) -> Option<(Datagram, Datagram)> {
    let path = captures::file(test, CAPTURE)?;
    let capture = pcap::read_file(&path).expect("the capture reads");
    let [grq, rrq] = <[Datagram; 2]>::try_from(capture.datagrams).expect("a GRQ and an RRQ");
    Some((grq, rrq))
}

/// The core with `[[password]] USER = secret` (none when `None`), its wall clock at the
/// capture's second, `now` the instant of that second.
fn gatekeeper(secret: Option<&str>, at: Duration) -> (Gatekeeper, Instant) {
    let mut text = format!(
        "[gatekeeper]\ndiscovery = \"{DISCOVERY}\"\nseed = 235\n\
         [[region]]\nid = 1\n\
         [[clan]]\nname = \"a\"\nregion = 1\naddress = \"{CLAN}\"\nmax_sockets = 10\n"
    );
    if let Some(secret) = secret {
        text += &format!("[[password]]\nalias = \"{USER}\"\nsecret = \"{secret}\"\n");
    }
    let config = rasgk::config::from_toml(&text, "h235.toml").unwrap();
    let mut gatekeeper = Gatekeeper::new(config).unwrap();
    let now = Instant::now();
    gatekeeper.set_wall_clock(now, Duration::from_secs(at.as_secs()));
    (gatekeeper, now)
}

/// The one reply to a datagram.
fn ask(gatekeeper: &mut Gatekeeper, now: Instant, d: &Datagram, to: &str) -> Transmit {
    let mut out = gatekeeper.handle(now, addr(to), d.src, &d.payload);
    assert_eq!(out.len(), 1, "one reply expected: {out:?}");
    out.remove(0)
}

/// The reply as a datagram of the transcript, a millisecond after its request.
fn answer(request: &Datagram, reply: &Transmit) -> Datagram {
    Datagram {
        frame: 0,
        time: request.time + Duration::from_millis(1),
        src: reply.local,
        dst: reply.to,
        payload: reply.payload.to_vec(),
    }
}

/// What tshark reads of these datagrams.
fn tshark_reads(name: &str, datagrams: &[Datagram]) -> tshark::Decoded {
    let dir = std::env::temp_dir().join(format!("rasgk-h235-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.pcap"));
    pcap::write_file(&path, datagrams).unwrap();
    let decoded = tshark::decode(&path, &[]);
    std::fs::remove_dir_all(&dir).ok();
    for frame in &decoded.frames {
        assert!(frame.malformed().is_empty(), "{}", frame.text());
    }
    decoded
}

/// HMAC-SHA1-96 of `octets` with the 12 octets of `hash` zeroed where they are, keyed with
/// SHA-1 of `secret`: H.235.1 procedure I computed here, with the crates directly.
fn hmac_sha1_96(octets: &[u8], hash: &[u8], secret: &str) -> Vec<u8> {
    let at = octets
        .windows(hash.len())
        .position(|w| w == hash)
        .expect("the hash is in the message");
    let mut zeroed = octets.to_vec();
    zeroed[at..at + hash.len()].fill(0);
    let key = Sha1::digest(secret.as_bytes());
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(&key).unwrap();
    mac.update(&zeroed);
    mac.finalize().into_bytes()[..12].to_vec()
}

/// The 12 octets of the first procedure I hash of a message.
fn procedure1_hash(octets: &[u8]) -> Vec<u8> {
    let message = ras::decode(octets).unwrap();
    let tokens = match &message {
        RasMessage::registrationRequest(m) => m.crypto_tokens.as_deref(),
        RasMessage::registrationConfirm(m) => m.crypto_tokens.as_deref(),
        RasMessage::admissionConfirm(m) => m.crypto_tokens.as_deref(),
        RasMessage::admissionReject(m) => m.crypto_tokens.as_deref(),
        _ => None,
    };
    let token = h235_1::hashed_tokens(tokens);
    assert_eq!(token.len(), 1, "one procedure I token in {message:?}");
    token[0].hash.to_vec()
}

/// The captured RRQ with only its MD5 token (re-encoded).
fn md5_only(rrq: &Datagram) -> Datagram {
    let RasMessage::registrationRequest(mut m) = ras::decode(&rrq.payload).unwrap() else {
        panic!("an RRQ");
    };
    m.crypto_tokens
        .as_mut()
        .unwrap()
        .retain(|t| matches!(t, asn::CryptoH323Token::cryptoEPPwdHash(_)));
    assert_eq!(m.crypto_tokens.as_ref().map(Vec::len), Some(1));
    Datagram {
        payload: ras::encode(&RasMessage::registrationRequest(m)).unwrap(),
        ..rrq.clone()
    }
}

fn reject_reason(octets: &[u8]) -> String {
    match ras::decode(octets).unwrap() {
        RasMessage::registrationReject(rrj) => format!("{:?}", rrj.reject_reason),
        other => panic!("an RRJ expected, got {other:?}"),
    }
}

#[test]
fn the_captured_procedure_i_hash_is_the_hmac_of_the_rrq_with_it_zeroed() {
    let Some((_, rrq)) = captured("the_captured_procedure_i_hash") else {
        return;
    };
    let hash = procedure1_hash(&rrq.payload);
    // The oracle: the endpoint's own hash, computed again here from the captured octets.
    assert_eq!(hmac_sha1_96(&rrq.payload, &hash, "s3cret"), hash);
    assert_ne!(hmac_sha1_96(&rrq.payload, &hash, "s3creT"), hash);
    // rasgk's check agrees, and only with the right key.
    let hash: [u8; 12] = hash.try_into().unwrap();
    assert!(h235_1::authenticates(
        &rrq.payload,
        &hash,
        &h235_1::key("s3cret")
    ));
    assert!(!h235_1::authenticates(
        &rrq.payload,
        &hash,
        &h235_1::key("other")
    ));
}

#[test]
fn the_gcf_to_h323plus_selects_hmac_sha1_96_of_its_offer_as_tshark_reads_it() {
    let Some((grq, rrq)) = captured("the_gcf_to_h323plus_selects") else {
        return;
    };
    let (mut gk, now) = gatekeeper(Some("s3cret"), grq.time);
    let gcf = answer(&grq, &ask(&mut gk, now, &grq, DISCOVERY));
    // Offering MD5 alone (the same GRQ, its algorithmOIDs cut to MD5), MD5 is selected.
    let RasMessage::gatekeeperRequest(mut offer) = ras::decode(&grq.payload).unwrap() else {
        panic!("a GRQ");
    };
    offer.request_seq_num = asn::RequestSeqNum(offer.request_seq_num.0 + 10);
    offer
        .algorithm_oids
        .as_mut()
        .unwrap()
        .retain(|oid| oid.as_ref() == ras::h235::MD5_OID);
    let md5_grq = Datagram {
        time: grq.time + Duration::from_millis(10),
        payload: ras::encode(&RasMessage::gatekeeperRequest(offer)).unwrap(),
        ..grq.clone()
    };
    let md5_gcf = answer(&md5_grq, &ask(&mut gk, now, &md5_grq, DISCOVERY));
    // Without passwords nothing is selected: the endpoint keeps what it has.
    let (mut free, now) = gatekeeper(None, grq.time);
    let plain = Datagram {
        time: grq.time + Duration::from_millis(20),
        ..answer(&grq, &ask(&mut free, now, &grq, DISCOVERY))
    };
    let _ = rrq;
    if tshark::require_tshark("the_gcf_to_h323plus_selects").is_none() {
        return;
    }
    let decoded = tshark_reads("gcf", &[grq, gcf, md5_grq, md5_gcf, plain]);
    let kinds: Vec<_> = decoded
        .frames
        .iter()
        .map(|f| f.ras_message().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "gatekeeperRequest",
            "gatekeeperConfirm",
            "gatekeeperRequest",
            "gatekeeperConfirm",
            "gatekeeperConfirm"
        ]
    );
    // The GRQ offers three mechanisms and three algorithms, as captured.
    let offered = decoded.frame(1);
    assert_eq!(offered.values("AuthenticationMechanism").len(), 3);
    assert_eq!(
        offered.values("algorithmOIDs item"),
        [
            "0.0.8.235.0.2.6 (HMAC-SHA1-96)",
            "1.2.840.113548.10.1.2.1 (ISO assigned OIDs, USA.113548.10.1.2.1)",
            "1.2.840.113549.2.5 (md5)"
        ],
        "{}",
        offered.text()
    );
    for (frame, algorithm) in [
        (decoded.frame(2), "0.0.8.235.0.2.6 (HMAC-SHA1-96)"),
        (decoded.frame(4), "1.2.840.113549.2.5 (md5)"),
    ] {
        assert_eq!(
            frame.value("authenticationMode").as_deref(),
            Some("pwdHash (2)"),
            "{}",
            frame.text()
        );
        assert_eq!(
            frame.values("algorithmOID"),
            [algorithm],
            "{}",
            frame.text()
        );
    }
    let plain = decoded.frame(5);
    assert!(!plain.has("authenticationMode"), "{}", plain.text());
    assert!(!plain.has("algorithmOID"), "{}", plain.text());
}

#[test]
fn the_captured_rrq_is_accepted_under_procedure_i_and_its_rcf_is_secured_as_tshark_reads_it() {
    let test = "the_captured_rrq_is_accepted_under_procedure_i";
    let Some((grq, rrq)) = captured(test) else {
        return;
    };
    let (mut gk, now) = gatekeeper(Some("s3cret"), rrq.time);
    let gcf = answer(&grq, &ask(&mut gk, now, &grq, DISCOVERY));
    let rcf = answer(&rrq, &ask(&mut gk, now, &rrq, CLAN));
    let RasMessage::registrationConfirm(confirm) = ras::decode(&rcf.payload).unwrap() else {
        panic!("an RCF: {:?}", ras::decode(&rcf.payload));
    };
    let endpoint_id = ras::reply::EndpointId::from_asn(&confirm.endpoint_identifier).text();
    assert_eq!(gk.registrations().len(), 1);
    assert_eq!(gk.registrations()[0].aliases[0], format!("h323-ID:{USER}"));
    // The RCF's hash, computed here apart from rasgk's sealing.
    let hash = procedure1_hash(&rcf.payload);
    assert_eq!(hmac_sha1_96(&rcf.payload, &hash, "s3cret"), hash);

    // The same captured token on any other message proves nothing: the requestSeqNum
    // changed (a new message), from another port so no cached reply answers it. The MD5
    // token beside it is still right, but procedure I decides.
    let RasMessage::registrationRequest(mut changed) = ras::decode(&rrq.payload).unwrap() else {
        panic!("an RRQ");
    };
    changed.request_seq_num = asn::RequestSeqNum(52_090);
    let mut other = Datagram {
        payload: ras::encode(&RasMessage::registrationRequest(changed)).unwrap(),
        ..rrq.clone()
    };
    other.src.set_port(rrq.src.port() + 1);
    let denied = ask(&mut gk, now, &other, CLAN);
    assert_eq!(reject_reason(&denied.payload), "securityDenial(())");
    // And the captured RRQ itself again from elsewhere: the same token twice, a replay.
    let mut again = rrq.clone();
    again.src.set_port(rrq.src.port() + 2);
    let denied = ask(&mut gk, now, &again, CLAN);
    assert_eq!(reject_reason(&denied.payload), "securityDenial(())");
    assert_eq!(
        gk.stats().security_denied[ras::MessageKind::Rrq as usize],
        2
    );

    // H323Plus's next request names the endpoint by the identifier the RCF gave: an ARQ
    // sealed as it seals it gets an answer secured the same way, to that identifier.
    let key = h235_1::key("s3cret");
    let mut arq = ras::request::admission_request(&ras::request::Arq {
        request_seq_num: 52_081,
        endpoint_id: &ras::reply::EndpointId::new(&endpoint_id).unwrap(),
        destination: &[ras::Alias::dialled_digits("1002").unwrap()],
        source: &[],
        call: ras::request::Call {
            call_reference_value: 1,
            conference_id: [7; 16],
            call_id: [7; 16],
        },
        band_width: 1280,
        answer_call: false,
    });
    let token = h235_1::token(
        "rasgk",
        &endpoint_id,
        rrq.time.as_secs() as u32,
        661_520_592,
    )
    .unwrap();
    ras::request::set_crypto_tokens(&mut arq, vec![token]);
    let mut octets = ras::encode(&arq).unwrap();
    assert!(h235_1::seal(&mut octets, &key));
    let arq = Datagram {
        time: rrq.time + Duration::from_millis(5),
        payload: octets,
        ..rrq.clone()
    };
    let arj = answer(&arq, &ask(&mut gk, now, &arq, CLAN));
    let arj_hash = procedure1_hash(&arj.payload);
    assert_eq!(hmac_sha1_96(&arj.payload, &arj_hash, "s3cret"), arj_hash);

    if tshark::require_tshark(test).is_none() {
        return;
    }
    let decoded = tshark_reads("rcf", &[grq, gcf, rrq, rcf, arq, arj]);
    let rcf = decoded.frame(4);
    assert_eq!(rcf.ras_message().as_deref(), Some("registrationConfirm"));
    let token = rcf.subtree_path(&["cryptoTokens", "cryptoHashedToken"]);
    let value = |label| tshark::values_of(token.iter().copied(), label);
    assert_eq!(
        rcf.values("CryptoH323Token"),
        ["nestedcryptoToken (7)"],
        "{}",
        rcf.text()
    );
    assert_eq!(
        value("tokenOID"),
        [
            "0.0.8.235.0.2.1 (all fields in RAS/CS)",
            "0.0.8.235.0.2.5 (ClearToken)"
        ],
        "{}",
        rcf.text()
    );
    assert_eq!(
        value("generalID"),
        std::slice::from_ref(&endpoint_id),
        "{}",
        rcf.text()
    );
    assert_eq!(value("sendersID"), ["rasgk"], "{}", rcf.text());
    assert_eq!(
        value("algorithmOID"),
        ["0.0.8.235.0.2.6 (HMAC-SHA1-96)"],
        "{}",
        rcf.text()
    );
    assert_eq!(
        value("timeStamp"),
        ["Dec  3, 2026 06:09:21.000000000 UTC"],
        "{}",
        rcf.text()
    );
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        value("hash"),
        [format!("{hex} [bit length 96]")],
        "{}",
        rcf.text()
    );
    let arj = decoded.frame(6);
    let token = arj.subtree_path(&["cryptoTokens", "cryptoHashedToken"]);
    assert_eq!(
        tshark::values_of(token.iter().copied(), "generalID"),
        [endpoint_id],
        "{}",
        arj.text()
    );
}

#[test]
fn the_captured_rrq_with_another_secret_is_denied() {
    let Some((_, rrq)) = captured("the_captured_rrq_with_another_secret") else {
        return;
    };
    for rrq in [rrq.clone(), md5_only(&rrq)] {
        let (mut gk, now) = gatekeeper(Some("s3creT"), rrq.time);
        let rrj = ask(&mut gk, now, &rrq, CLAN);
        assert_eq!(reject_reason(&rrj.payload), "securityDenial(())");
        assert!(
            ras::decode(&rrj.payload).is_ok_and(|m| matches!(
                m,
                RasMessage::registrationReject(rrj) if rrj.crypto_tokens.is_none()
            )),
            "a denied request proved nothing: its reject is not secured"
        );
        assert!(gk.registrations().is_empty());
        assert_eq!(gk.stats().rejects.get("RRJ securityDenial"), Some(&1));
    }
}

#[test]
fn the_captured_rrq_is_accepted_under_md5_alone_and_its_rcf_carries_no_token() {
    let test = "the_captured_rrq_is_accepted_under_md5_alone";
    let Some((_, rrq)) = captured(test) else {
        return;
    };
    let md5 = md5_only(&rrq);
    let (mut gk, now) = gatekeeper(Some("s3cret"), rrq.time);
    let rcf = answer(&md5, &ask(&mut gk, now, &md5, CLAN));
    let Ok(RasMessage::registrationConfirm(confirm)) = ras::decode(&rcf.payload) else {
        panic!("an RCF");
    };
    // H323Plus's MD5 authenticator secures requests only: an RCF without tokens is right.
    assert_eq!(confirm.crypto_tokens, None);
    assert_eq!(gk.registrations().len(), 1);
    // Outside the password window (120 s) the same token is refused.
    let (mut late, now) = gatekeeper(Some("s3cret"), rrq.time + Duration::from_secs(121));
    let rrj = ask(&mut late, now, &md5, CLAN);
    assert_eq!(reject_reason(&rrj.payload), "securityDenial(())");
    if tshark::require_tshark(test).is_none() {
        return;
    }
    let decoded = tshark_reads("md5", &[md5, rcf]);
    let sent = decoded.frame(1);
    assert_eq!(
        sent.values("CryptoH323Token"),
        ["cryptoEPPwdHash (0)"],
        "{}",
        sent.text()
    );
    let rcf = decoded.frame(2);
    assert_eq!(rcf.ras_message().as_deref(), Some("registrationConfirm"));
    assert!(!rcf.has("cryptoTokens"), "{}", rcf.text());
}
