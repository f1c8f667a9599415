//! Who may register: `strict_network_map`, per-alias passwords (H.235 `cryptoEPPwdHash`) and
//! the admin port's loopback rule. The rules in the core in virtual time; the password also
//! through the real `rasgk serve` on UDP, with the datagrams decoded by tshark.
//!
//! Addresses: the gatekeeper on 127.0.50.x, phones on 127.50.x.y (inside the map) and
//! 127.51.x.y (outside it).

mod support;

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use rasgk::config;
use rasgk::gatekeeper::{Gatekeeper, Transmit};
use rasgk::phone::{Answer, Phone};
use support::server::{write_transcript, Served, UdpPhone};
use support::tshark;

const DISCOVERY: &str = "127.0.50.1:1719";
const CLAN: &str = "127.0.50.11:1719";
/// 2026-01-01 00:00:00 UTC: the wall clock of the virtual-time tests.
const EPOCH_S: u64 = 1_767_225_600;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn fixture(name: &str) -> String {
    format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The core on `fixtures/lab/access.toml` (or a variant), a virtual clock set to EPOCH_S.
struct Lab {
    gatekeeper: Gatekeeper,
    start: Instant,
    now: Instant,
}

impl Lab {
    fn new(edit: impl FnOnce(&mut config::Config)) -> Lab {
        let mut config = config::load(fixture("lab/access.toml").as_ref()).unwrap();
        edit(&mut config);
        let start = Instant::now();
        let mut gatekeeper = Gatekeeper::new(config).unwrap();
        gatekeeper.set_wall_clock(start, Duration::from_secs(EPOCH_S));
        Lab {
            gatekeeper,
            start,
            now: start,
        }
    }

    fn at(&mut self, secs: u64) -> Vec<Transmit> {
        self.now = self.start + Duration::from_secs(secs);
        self.gatekeeper.handle_timeout(self.now)
    }

    fn ask(&mut self, local: &str, phone: &mut Phone, datagram: &[u8]) -> Answer {
        let out = self
            .gatekeeper
            .handle(self.now, addr(local), phone.ras_address, datagram);
        assert_eq!(out.len(), 1, "one reply expected, got {out:?}");
        let answer = Answer::read(&out[0].payload).unwrap();
        phone.learn(&answer);
        answer
    }

    fn grq(&mut self, phone: &mut Phone) -> Answer {
        let grq = phone.grq();
        self.ask(DISCOVERY, phone, &grq)
    }

    fn rrq(&mut self, phone: &mut Phone) -> Answer {
        let rrq = phone.rrq();
        self.ask(CLAN, phone, &rrq)
    }

    fn keep_alive(&mut self, phone: &mut Phone) -> Answer {
        let rrq = phone.keep_alive().expect("registered");
        self.ask(CLAN, phone, &rrq)
    }

    fn sockets(&self) -> u32 {
        self.gatekeeper.clans()[0].sockets
    }
}

fn phone(extension: u32, ip: [u8; 4]) -> Phone {
    Phone::extension(extension, SocketAddr::from((ip, 5000)))
}

/// A phone with a password whose tokens carry `time_stamp`.
fn with_password(mut phone: Phone, secret: &str, time_stamp: u64) -> Phone {
    phone.password = Some(secret.to_string());
    phone.token_time = Some(u32::try_from(time_stamp).unwrap());
    phone
}

fn reason(answer: &Answer) -> &str {
    match answer {
        Answer::Grj { reason, .. } | Answer::Rrj { reason, .. } => reason,
        other => panic!("a reject expected, got {other:?}"),
    }
}

#[test]
fn strict_network_map_refuses_sources_outside_the_map() {
    let mut lab = Lab::new(|_| {});
    let mut inside = phone(3001, [127, 50, 0, 1]);
    let mut outside = phone(3002, [127, 51, 0, 1]);
    assert!(matches!(lab.grq(&mut inside), Answer::Gcf { .. }));
    assert!(matches!(lab.rrq(&mut inside), Answer::Rcf { .. }));
    let grj = lab.grq(&mut outside);
    assert_eq!(reason(&grj), "terminalExcluded");
    // Straight to the C-LAN: RRJ has no terminalExcluded; securityDenial, and no socket.
    let rrj = lab.rrq(&mut outside);
    assert_eq!(reason(&rrj), "securityDenial");
    assert_eq!(lab.sockets(), 1);
    let rejects = &lab.gatekeeper.stats().rejects;
    assert_eq!(rejects.get("GRJ terminalExcluded"), Some(&1));
    assert_eq!(rejects.get("RRJ securityDenial"), Some(&1));
    assert_eq!(
        lab.gatekeeper.counts().reservations,
        0,
        "GRJ reserved nothing"
    );
}

#[test]
fn without_strict_network_map_an_unmapped_phone_takes_the_clans_region() {
    let mut lab = Lab::new(|config| config.gatekeeper.strict_network_map = false);
    let mut outside = phone(3002, [127, 51, 0, 1]);
    assert!(matches!(lab.grq(&mut outside), Answer::Gcf { .. }));
    assert!(matches!(lab.rrq(&mut outside), Answer::Rcf { .. }));
    assert_eq!(lab.gatekeeper.registrations()[0].region, 1);
}

#[test]
fn the_right_password_registers_a_wrong_or_missing_one_is_denied() {
    let mut lab = Lab::new(|_| {});
    let ip = [127, 50, 0, 2];
    let mut wrong = with_password(phone(2001, ip), "guess", EPOCH_S);
    assert_eq!(reason(&lab.rrq(&mut wrong)), "securityDenial");
    let mut missing = phone(2001, ip);
    assert_eq!(reason(&lab.rrq(&mut missing)), "securityDenial");
    assert_eq!(lab.sockets(), 0);
    let mut right = with_password(phone(2001, ip), "s3cret", EPOCH_S + 3);
    assert!(matches!(lab.rrq(&mut right), Answer::Rcf { .. }));
    assert_eq!(lab.sockets(), 1);
    // An alias without a password needs no token.
    let mut free = phone(2002, [127, 50, 0, 3]);
    assert!(matches!(lab.rrq(&mut free), Answer::Rcf { .. }));
    assert_eq!(
        lab.gatekeeper.stats().rejects.get("RRJ securityDenial"),
        Some(&2)
    );
}

#[test]
fn password_tokens_must_be_recent_and_newer_than_the_last_one() {
    let mut lab = Lab::new(|_| {});
    let ip = [127, 50, 0, 4];
    // The window is 120 s either way.
    let mut early = with_password(phone(2001, ip), "s3cret", EPOCH_S - 121);
    assert_eq!(reason(&lab.rrq(&mut early)), "securityDenial");
    let mut late = with_password(phone(2001, ip), "s3cret", EPOCH_S + 121);
    assert_eq!(reason(&lab.rrq(&mut late)), "securityDenial");
    let mut p = with_password(phone(2001, ip), "s3cret", EPOCH_S + 100);
    assert!(matches!(lab.rrq(&mut p), Answer::Rcf { .. }));
    // A token older than the one accepted is a replay, even inside the window.
    p.token_time = Some((EPOCH_S + 50) as u32);
    assert_eq!(reason(&lab.keep_alive(&mut p)), "securityDenial");
    // The clock moves on: the wall clock follows the core's Instant.
    lab.at(200);
    p.token_time = Some((EPOCH_S + 200) as u32);
    assert!(matches!(lab.keep_alive(&mut p), Answer::Rcf { .. }));
}

#[test]
fn a_lightweight_rrq_of_a_protected_alias_needs_its_token_too() {
    let mut lab = Lab::new(|_| {});
    let mut p = with_password(phone(2001, [127, 50, 0, 5]), "s3cret", EPOCH_S);
    assert!(matches!(lab.rrq(&mut p), Answer::Rcf { .. }));
    assert!(matches!(lab.keep_alive(&mut p), Answer::Rcf { .. }));
    p.password = Some("guess".into());
    assert_eq!(reason(&lab.keep_alive(&mut p)), "securityDenial");
    p.password = None;
    assert_eq!(reason(&lab.keep_alive(&mut p)), "securityDenial");
    assert_eq!(lab.sockets(), 1, "a denied keep-alive unregisters nobody");
}

/// The reject reason of any reply, as the ASN.1 names it (`None` for a confirm).
fn any_reject(octets: &[u8]) -> Option<String> {
    use rasgk::ras::RasMessage as M;
    let reason = match rasgk::ras::decode(octets).unwrap() {
        M::registrationReject(m) => format!("{:?}", m.reject_reason),
        M::unregistrationReject(m) => format!("{:?}", m.reject_reason),
        M::admissionReject(m) => format!("{:?}", m.reject_reason),
        M::disengageReject(m) => format!("{:?}", m.reject_reason),
        M::bandwidthReject(m) => format!("{:?}", m.reject_reason),
        M::infoRequestNak(m) => format!("{:?}", m.nak_reason),
        _ => return None,
    };
    Some(reason.split('(').next().unwrap_or_default().to_string())
}

#[test]
fn every_request_naming_a_protected_endpoint_needs_its_token() {
    use rasgk::ras::{self, request, MessageKind};
    let mut lab = Lab::new(|_| {});
    let mut p = with_password(phone(2001, [127, 50, 0, 6]), "s3cret", EPOCH_S);
    assert!(matches!(lab.rrq(&mut p), Answer::Rcf { .. }));
    let mut callee = phone(2002, [127, 50, 0, 7]);
    assert!(matches!(lab.rrq(&mut callee), Answer::Rcf { .. }));
    let endpoint_id = p.endpoint_id.clone().expect("registered");
    let call = |id: u8| request::Call {
        call_reference_value: u16::from(id),
        conference_id: [id; 16],
        call_id: [id; 16],
    };
    // Every request of the phone, its tokens made with the phone's password as it is now.
    let requests = |p: &mut Phone| -> Vec<(MessageKind, Vec<u8>)> {
        let token = p
            .password
            .as_ref()
            .map(|secret| ras::h235::ep_pwd_hash(&p.aliases[0], secret, EPOCH_S as u32).unwrap());
        let with_token = |mut message: ras::RasMessage| {
            if let Some(token) = &token {
                request::set_crypto_tokens(&mut message, vec![token.clone()]);
            }
            ras::encode(&message).unwrap()
        };
        let brq = with_token(request::bandwidth_request(
            p.next_seq(),
            &endpoint_id,
            call(1),
            640,
        ));
        let mut irr = request::info_request_response(
            p.next_seq(),
            &endpoint_id,
            p.ras_address,
            p.call_signal_address,
            &p.aliases,
            true,
        );
        if let ras::RasMessage::infoRequestResponse(irr) = &mut irr {
            irr.need_response = Some(true);
        }
        let irr = with_token(irr);
        vec![
            (MessageKind::Rrq, p.keep_alive().unwrap()),
            (MessageKind::Arq, p.arq("2002", [1; 16]).unwrap()),
            (MessageKind::Drq, p.drq([1; 16]).unwrap()),
            (MessageKind::Brq, brq),
            (MessageKind::Irr, irr),
            (MessageKind::Urq, p.urq()),
        ]
    };
    let source = p.ras_address;
    let send = |lab: &mut Lab, datagram: &[u8]| {
        lab.gatekeeper.handle(lab.now, addr(CLAN), source, datagram)
    };
    for secret in [Some("guess"), None] {
        p.password = secret.map(str::to_string);
        for (kind, datagram) in requests(&mut p) {
            let out = send(&mut lab, &datagram);
            assert_eq!(out.len(), 1, "{kind:?} with {secret:?}: one answer");
            assert_eq!(
                any_reject(&out[0].payload).as_deref(),
                Some("securityDenial"),
                "{kind:?} with {secret:?}"
            );
        }
    }
    // Still registered, with its socket: a denied request changes nothing.
    assert_eq!(lab.gatekeeper.registrations().len(), 2);
    assert_eq!(lab.sockets(), 2);
    let stats = lab.gatekeeper.stats();
    for kind in [
        MessageKind::Rrq,
        MessageKind::Arq,
        MessageKind::Drq,
        MessageKind::Brq,
        MessageKind::Irr,
        MessageKind::Urq,
    ] {
        assert_eq!(stats.security_denied[kind as usize], 2, "{kind:?}");
    }
    for message in ["RRJ", "URJ", "ARJ", "DRJ", "BRJ", "INAK"] {
        assert_eq!(
            stats.rejects.get(&format!("{message} securityDenial")),
            Some(&2),
            "{message}"
        );
    }
    // An IRR asking for no answer is dropped, and counted.
    let mut quiet = request::info_request_response(
        p.next_seq(),
        &endpoint_id,
        p.ras_address,
        p.call_signal_address,
        &p.aliases,
        true,
    );
    request::set_crypto_tokens(
        &mut quiet,
        vec![ras::h235::ep_pwd_hash(&p.aliases[0], "guess", EPOCH_S as u32).unwrap()],
    );
    assert!(send(&mut lab, &ras::encode(&quiet).unwrap()).is_empty());
    assert_eq!(
        lab.gatekeeper.stats().security_denied[MessageKind::Irr as usize],
        3
    );
    // With the right password every one is answered as without passwords.
    p.password = Some("s3cret".into());
    for (kind, datagram) in requests(&mut p) {
        let out = send(&mut lab, &datagram);
        assert_eq!(out.len(), 1, "{kind:?}");
        assert_eq!(any_reject(&out[0].payload), None, "{kind:?} is confirmed");
    }
    assert_eq!(
        lab.gatekeeper.registrations().len(),
        1,
        "the URQ unregistered it"
    );
}

/// (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's civil_from_days).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// A UNIX time as tshark shows an absolute time: `Jan  1, 2026 00:00:00.000000000 UTC`.
fn tshark_time(secs: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (year, month, day) = civil((secs / 86_400) as i64);
    let rest = secs % 86_400;
    format!(
        "{} {day:>2}, {year} {:02}:{:02}:{:02}.000000000 UTC",
        MONTHS[month as usize - 1],
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[test]
fn tshark_time_matches_known_dates() {
    assert_eq!(tshark_time(EPOCH_S), "Jan  1, 2026 00:00:00.000000000 UTC");
    assert_eq!(
        tshark_time(951_825_600),
        "Feb 29, 2000 12:00:00.000000000 UTC"
    );
}

#[test]
fn password_over_udp_right_registers_wrong_is_denied_as_tshark_reads_it() {
    let tshark_found = tshark::require_tshark("password_over_udp").is_some();
    let mut served = Served::start(
        &["--config", &fixture("lab/access.toml")],
        addr("127.0.50.1:7050"),
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut right = UdpPhone::bind(with_password(phone(2001, [127, 50, 1, 1]), "s3cret", now));
    let mut wrong = UdpPhone::bind(with_password(phone(2001, [127, 50, 1, 2]), "guess", now));
    let rrq = wrong.phone.rrq();
    let rrj = wrong.ask(addr(CLAN), &rrq);
    assert_eq!(reason(&rrj), "securityDenial");
    let rrq = right.phone.rrq();
    let rcf = right.ask(addr(CLAN), &rrq);
    assert!(matches!(rcf, Answer::Rcf { .. }), "{rcf:?}");
    let registrations = served.get_json("/api/registrations");
    assert_eq!(registrations.as_array().map(Vec::len), Some(1));
    assert_eq!(registrations[0]["aliases"][0], "2001");
    assert_eq!(
        registrations[0]["ras_address"],
        right.phone.ras_address.to_string()
    );
    assert!(served.stop().success());
    if !tshark_found {
        return;
    }

    let mut transcript = wrong.transcript.clone();
    transcript.extend(right.transcript.iter().cloned());
    let dir = std::env::temp_dir().join(format!("rasgk-access-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("password.pcap");
    write_transcript(&pcap, &transcript);
    let decoded = tshark::decode(&pcap, &[]);
    std::fs::remove_dir_all(&dir).ok();
    let kinds: Vec<String> = decoded
        .frames
        .iter()
        .map(|f| f.ras_message().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "registrationRequest",
            "registrationReject",
            "registrationRequest",
            "registrationConfirm"
        ],
        "{}",
        decoded.stderr
    );
    for frame in &decoded.frames {
        assert!(frame.malformed().is_empty(), "{}", frame.text());
    }
    for (frame, secret) in [
        (&decoded.frames[0], "guess"),
        (&decoded.frames[2], "s3cret"),
    ] {
        let token = frame.subtree_path(&["cryptoTokens", "cryptoEPPwdHash"]);
        let value = |label| tshark::values_of(token.iter().copied(), label);
        assert_eq!(
            frame.values("CryptoH323Token"),
            ["cryptoEPPwdHash (0)"],
            "{}",
            frame.text()
        );
        assert_eq!(value("dialledDigits"), ["2001"], "{}", frame.text());
        assert_eq!(value("timeStamp"), [tshark_time(now)], "{}", frame.text());
        assert_eq!(
            value("algorithmOID"),
            ["1.2.840.113549.2.5 (md5)"],
            "{}",
            frame.text()
        );
        let hash = rasgk::ras::h235::pwd_hash("2001", secret, now as u32).unwrap();
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            value("hash"),
            [format!("{hex} [bit length 128]")],
            "{}",
            frame.text()
        );
    }
    assert_eq!(
        decoded.frames[1].value("rejectReason").as_deref(),
        Some("securityDenial (11)"),
        "{}",
        decoded.frames[1].text()
    );
    assert!(
        decoded.frames[3].value("endpointIdentifier").is_some(),
        "{}",
        decoded.frames[3].text()
    );
}

#[test]
fn an_admin_port_off_loopback_without_a_token_is_refused_before_binding() {
    let path = fixture("config/bad-admin-listen-open-without-token.toml");
    for command in [
        &["check-config", &path][..],
        &["serve", "--config", &path][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
            .args(command)
            .output()
            .expect("rasgk runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        for fragment in [
            "bad-admin-listen-open-without-token.toml",
            "[admin] listen",
            "[admin] token",
        ] {
            assert!(
                stderr.contains(fragment),
                "{command:?} names {fragment}: {stderr}"
            );
        }
    }
}
