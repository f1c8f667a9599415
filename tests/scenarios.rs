//! Scenario tests of the gatekeeper core in virtual time (docs/rules.md §2–9, §11–12): a clock that
//! only moves when a test moves it, phones that are plain values, and no sockets.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rasgk::config;
use rasgk::gatekeeper::{ClanView, Gatekeeper, Transmit};
use rasgk::phone::{Answer, Phone};

const DISCOVERY: &str = "127.0.0.1:1719";

/// A gatekeeper on a TOML topology, a virtual clock, and helpers to talk to it.
struct Lab {
    gatekeeper: Gatekeeper,
    start: Instant,
    now: Instant,
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

impl Lab {
    fn new(toml: &str) -> Lab {
        let config = config::from_toml(toml, "scenario.toml").unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        Lab {
            gatekeeper: Gatekeeper::new(config).unwrap(),
            start,
            now: start,
        }
    }

    /// Moves the clock to `secs` after the start and runs the timers due.
    fn at(&mut self, secs: u64) -> Vec<Transmit> {
        self.now = self.start + Duration::from_secs(secs);
        self.gatekeeper.handle_timeout(self.now)
    }

    /// Sends a datagram from a phone to `local`; returns the raw replies.
    fn send(&mut self, local: SocketAddr, phone: &Phone, datagram: &[u8]) -> Vec<Transmit> {
        self.gatekeeper
            .handle(self.now, local, phone.ras_address, datagram)
    }

    /// Sends and reads the one reply.
    fn ask(&mut self, local: SocketAddr, phone: &mut Phone, datagram: &[u8]) -> Answer {
        let out = self.send(local, phone, datagram);
        assert_eq!(out.len(), 1, "one reply expected, got {out:?}");
        assert_eq!(
            out[0].to, phone.ras_address,
            "reply goes back to the source"
        );
        assert_eq!(
            out[0].local, local,
            "reply leaves from where the request arrived"
        );
        let answer = Answer::read(&out[0].payload).unwrap();
        phone.learn(&answer);
        answer
    }

    fn grq(&mut self, phone: &mut Phone) -> Answer {
        let grq = phone.grq();
        self.ask(addr(DISCOVERY), phone, &grq)
    }

    fn rrq_at(&mut self, clan: SocketAddr, phone: &mut Phone) -> Answer {
        let rrq = phone.rrq();
        self.ask(clan, phone, &rrq)
    }

    /// GRQ → GCF → RRQ at the named C-LAN → RCF; returns the C-LAN's address.
    fn register(&mut self, phone: &mut Phone) -> SocketAddr {
        let clan = match self.grq(phone) {
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            } => clan,
            other => panic!("GCF expected, got {other:?}"),
        };
        match self.rrq_at(clan, phone) {
            Answer::Rcf { .. } => clan,
            other => panic!("RCF expected, got {other:?}"),
        }
    }

    fn clans(&self) -> Vec<ClanView> {
        self.gatekeeper.clans()
    }

    fn clan(&self, name: &str) -> ClanView {
        self.clans().into_iter().find(|c| c.name == name).unwrap()
    }

    fn name_of(&self, address: SocketAddr) -> String {
        self.clans()
            .into_iter()
            .find(|c| c.address == address)
            .map(|c| c.name)
            .unwrap_or_else(|| panic!("{address} is no C-LAN"))
    }

    /// (sockets, reserved) of every C-LAN in configuration order.
    fn loads(&self) -> Vec<(u32, u32)> {
        self.clans()
            .iter()
            .map(|c| (c.sockets, c.reserved))
            .collect()
    }
}

/// The reject reason of a GRJ, RRJ or URJ.
fn reason(answer: Answer) -> String {
    match answer {
        Answer::Grj { reason, .. } | Answer::Rrj { reason, .. } | Answer::Urj { reason, .. } => {
            reason
        }
        other => panic!("a reject expected, got {other:?}"),
    }
}

fn phone(region: u8, n: u8) -> Phone {
    Phone::extension(
        60_000 + u32::from(region) * 256 + u32::from(n),
        SocketAddr::from(([127, region, 0, n], 5000)),
    )
}

/// One region, three equal C-LANs.
const ONE_REGION: &str = r#"
[gatekeeper]
seed = 1
gcf_hold_s = 30
ttl_s = 300
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[clan]]
name = "a"
region = 1
address = "127.0.1.1:1719"
max_sockets = 10
[[clan]]
name = "b"
region = 1
address = "127.0.1.2:1719"
max_sockets = 10
[[clan]]
name = "c"
region = 1
address = "127.0.1.3:1719"
max_sockets = 10
"#;

#[test]
fn grq_burst_before_any_rrq_spreads_over_the_clans() {
    let mut lab = Lab::new(ONE_REGION);
    let mut phones: Vec<Phone> = (1..=9).map(|n| phone(1, n)).collect();
    let mut named = Vec::new();
    for phone in &mut phones {
        match lab.grq(phone) {
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            } => named.push(lab.name_of(clan)),
            other => panic!("GCF expected, got {other:?}"),
        }
    }
    // Least loaded with reservations counted, ties by configuration order: a b c a b c …
    assert_eq!(named, ["a", "b", "c", "a", "b", "c", "a", "b", "c"]);
    assert_eq!(lab.loads(), vec![(0, 3), (0, 3), (0, 3)]);
    // The RRQs turn reservations into sockets.
    for (phone, name) in phones.iter_mut().zip(&named) {
        let clan = lab.clan(name).address;
        assert!(matches!(lab.rrq_at(clan, phone), Answer::Rcf { .. }));
    }
    assert_eq!(lab.loads(), vec![(3, 0), (3, 0), (3, 0)]);
}

#[test]
fn reservations_expire_after_gcf_hold() {
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    lab.grq(&mut p);
    assert_eq!(lab.loads()[0], (0, 1));
    assert_eq!(
        lab.gatekeeper.poll_timeout(),
        Some(lab.start + Duration::from_secs(10))
    );
    lab.at(29);
    assert_eq!(lab.loads()[0], (0, 1), "held for 30 s");
    lab.at(30);
    assert_eq!(lab.loads()[0], (0, 0), "released at 30 s");
    assert_eq!(lab.gatekeeper.stats().reservations_expired, 1);
    // A later RRQ without a reservation still registers where there is room.
    assert!(matches!(
        lab.rrq_at(addr("127.0.1.1:1719"), &mut p),
        Answer::Rcf { .. }
    ));
    assert_eq!(lab.loads()[0], (1, 0));
}

#[test]
fn registrations_expire_after_ttl_unless_refreshed() {
    let mut lab = Lab::new(ONE_REGION);
    let mut kept = phone(1, 1);
    let mut left = phone(1, 2);
    let kept_at = lab.register(&mut kept);
    lab.register(&mut left);
    assert_eq!(lab.gatekeeper.registrations().len(), 2);
    lab.at(200);
    let keep_alive = kept.keep_alive().unwrap();
    match lab.ask(kept_at, &mut kept, &keep_alive) {
        Answer::Rcf { time_to_live_s, .. } => assert_eq!(time_to_live_s, Some(300)),
        other => panic!("RCF expected, got {other:?}"),
    }
    lab.at(299);
    assert_eq!(lab.gatekeeper.registrations().len(), 2);
    lab.at(300);
    let left_now: Vec<String> = lab
        .gatekeeper
        .registrations()
        .into_iter()
        .map(|r| r.endpoint_id)
        .collect();
    assert_eq!(left_now.len(), 1, "the unrefreshed phone expired at 300 s");
    assert_eq!(left_now[0], kept.endpoint_id.as_ref().unwrap().text());
    assert_eq!(
        lab.loads().iter().map(|l| l.0).sum::<u32>(),
        1,
        "its socket is freed"
    );
    lab.at(499);
    assert_eq!(lab.gatekeeper.registrations().len(), 1);
    lab.at(500);
    assert!(
        lab.gatekeeper.registrations().is_empty(),
        "300 s after its refresh"
    );
    assert_eq!(lab.gatekeeper.stats().registrations_expired, 2);
    // An expired endpoint's keep-alive is told to register in full.
    let keep_alive = kept.keep_alive().unwrap();
    assert_eq!(
        reason(lab.ask(kept_at, &mut kept, &keep_alive)),
        "fullRegistrationRequired"
    );
}

#[test]
fn retransmissions_get_the_identical_reply_and_change_nothing() {
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    let discovery = addr(DISCOVERY);

    let grq = p.grq();
    let first = lab.send(discovery, &p, &grq);
    let loads = lab.loads();
    lab.at(3);
    let again = lab.send(discovery, &p, &grq);
    assert_eq!(first, again, "GRQ: identical GCF");
    assert_eq!(lab.loads(), loads, "GRQ: no second reservation");

    let clan = match Answer::read(&first[0].payload).unwrap() {
        Answer::Gcf {
            ras_address: Some(clan),
            ..
        } => clan,
        other => panic!("{other:?}"),
    };
    let rrq = p.rrq();
    let first = lab.send(clan, &p, &rrq);
    p.learn(&Answer::read(&first[0].payload).unwrap());
    let state = (lab.loads(), lab.gatekeeper.registrations());
    lab.at(6);
    assert_eq!(lab.send(clan, &p, &rrq), first, "RRQ: identical RCF");
    assert_eq!(
        (lab.loads(), lab.gatekeeper.registrations()),
        state,
        "RRQ: same state"
    );

    let urq = p.urq();
    let first = lab.send(clan, &p, &urq);
    assert!(matches!(
        Answer::read(&first[0].payload).unwrap(),
        Answer::Ucf { .. }
    ));
    let state = (lab.loads(), lab.gatekeeper.registrations());
    lab.at(9);
    assert_eq!(
        lab.send(clan, &p, &urq),
        first,
        "URQ: identical UCF, not URJ"
    );
    assert_eq!((lab.loads(), lab.gatekeeper.registrations()), state);
    assert_eq!(lab.gatekeeper.stats().retransmissions, 3);

    // After the 10 s hold the same URQ is a new request: the endpoint is gone now.
    lab.at(20);
    assert_eq!(
        reason(Answer::read(&lab.send(clan, &p, &urq)[0].payload).unwrap()),
        "notCurrentlyRegistered"
    );
}

#[test]
fn duplicate_alias_from_another_address_is_rejected() {
    let mut lab = Lab::new(ONE_REGION);
    let mut first = phone(1, 1);
    lab.register(&mut first);
    let mut impostor = Phone::new(first.aliases.clone(), addr("127.1.0.99:5000"));
    // Its GCF reserves a place; the refusal, which a retry cannot change, gives it back
    // (docs/rules.md §4.3).
    let Answer::Gcf {
        ras_address: Some(clan),
        ..
    } = lab.grq(&mut impostor)
    else {
        panic!("a GCF")
    };
    let reserved = |lab: &Lab| lab.loads().iter().map(|l| l.1).sum::<u32>();
    assert_eq!(reserved(&lab), 1);
    assert_eq!(reason(lab.rrq_at(clan, &mut impostor)), "duplicateAlias");
    assert_eq!(reserved(&lab), 0, "the refused phone's place is free again");
    assert_eq!(
        reason(lab.rrq_at(addr("127.0.1.2:1719"), &mut impostor)),
        "duplicateAlias"
    );
    assert_eq!(lab.gatekeeper.registrations().len(), 1);
    // The same phone registering again from its own address is a re-registration.
    let again = lab.register(&mut first);
    assert_eq!(lab.gatekeeper.registrations().len(), 1);
    assert_eq!(lab.loads().iter().map(|l| l.0).sum::<u32>(), 1);
    assert!(lab
        .clans()
        .iter()
        .any(|c| c.address == again && c.sockets == 1));
}

/// A gatekeeper-sent IRQ (the admin port's `POST /api/registrations/{id}/irq`) goes from the
/// C-LAN the endpoint registered at to its RAS address; the IRR carrying its
/// `requestSeqNum` is counted and raises an `info_response` event, another is not, and an
/// endpoint that is not registered gets none.
#[test]
fn a_gatekeeper_irq_is_answered_by_the_irr_of_its_sequence_number() {
    let mut lab = Lab::new(ONE_REGION);
    lab.gatekeeper.set_events_watched(true);
    let mut p = phone(1, 1);
    let clan = lab.register(&mut p);
    let id = p.endpoint_id.as_ref().unwrap().text();
    let (seq, out) = lab.gatekeeper.request_info(lab.now, &id).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].local, out[0].to), (clan, p.ras_address));
    assert_eq!(Answer::read(&out[0].payload).unwrap(), Answer::Irq { seq });
    // An IRR of another sequence number answers nothing of ours.
    let stray = p.irr(seq.wrapping_add(7)).unwrap();
    assert!(lab.send(clan, &p, &stray).is_empty());
    assert_eq!(lab.gatekeeper.stats().irq_answered, 0);
    lab.at(1);
    let irr = p.irr(seq).unwrap();
    assert!(
        lab.send(clan, &p, &irr).is_empty(),
        "an IRR asks for no answer"
    );
    assert_eq!(lab.gatekeeper.stats().irq_answered, 1);
    let events = serde_json::to_value(lab.gatekeeper.drain_events()).unwrap();
    let answered = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "info_response")
        .expect("an info_response event");
    assert_eq!(answered["endpoint_id"], id.as_str());
    assert_eq!(answered["seq"], seq);
    assert_eq!(answered["after_ms"], 1000);
    // Once is enough: the same IRR again is not counted twice.
    lab.send(clan, &p, &irr);
    assert_eq!(lab.gatekeeper.stats().irq_answered, 1);
    assert!(lab.gatekeeper.request_info(lab.now, "EP0000BEEF").is_err());
}

/// A drill's withheld answer (`POST /api/registrations/{id}/withhold`): the next keep-alive
/// is handled but its RCF not sent; the same request sent again gets it from the
/// retransmission cache, and there is still one registration. The drill is spent after one.
#[test]
fn a_withheld_answer_comes_with_the_requests_retransmission() {
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    let clan = lab.register(&mut p);
    let id = p.endpoint_id.as_ref().unwrap().text();
    let source = lab
        .gatekeeper
        .withhold(&id, rasgk::ras::MessageKind::Rrq)
        .unwrap();
    assert_eq!(source, p.ras_address);
    // Another kind of request is answered.
    let urq_free = p.grq();
    assert_eq!(lab.send(addr(DISCOVERY), &p, &urq_free).len(), 1);
    let keep_alive = p.keep_alive().unwrap();
    assert!(lab.send(clan, &p, &keep_alive).is_empty(), "withheld");
    let again = lab.send(clan, &p, &keep_alive);
    assert_eq!(again.len(), 1, "the retransmission gets the answer");
    assert!(matches!(
        Answer::read(&again[0].payload).unwrap(),
        Answer::Rcf { .. }
    ));
    assert_eq!(lab.gatekeeper.registrations().len(), 1);
    let next = p.keep_alive().unwrap();
    assert_eq!(
        lab.send(clan, &p, &next).len(),
        1,
        "one answer withheld, no more"
    );
    assert!(lab
        .gatekeeper
        .withhold("EP0000BEEF", rasgk::ras::MessageKind::Rrq)
        .is_err());
}

/// A drill's alternate (`POST /api/registrations/{id}/alternate`): the endpoint's next full
/// RRQ is refused with RRJ `resourceUnavailable` naming one alternate C-LAN of its AGL, and
/// the RRQ it then sends there is confirmed.
#[test]
fn a_drilled_alternate_refuses_the_next_full_rrq_and_names_another_clan() {
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    let clan = lab.register(&mut p);
    let id = p.endpoint_id.as_ref().unwrap().text();
    let alternate = lab.gatekeeper.refer_to_alternate(&id).unwrap().unwrap();
    let alternate_address = lab.clan(&alternate).address;
    assert_ne!(alternate_address, clan);
    lab.gatekeeper.unregister_endpoint(lab.now, &id).unwrap();
    match lab.rrq_at(clan, &mut p) {
        Answer::Rrj {
            reason, alternates, ..
        } => {
            assert_eq!(reason, "resourceUnavailable");
            assert_eq!(alternates, [alternate_address]);
        }
        other => panic!("RRJ expected, got {other:?}"),
    }
    assert!(matches!(
        lab.rrq_at(alternate_address, &mut p),
        Answer::Rcf { .. }
    ));
    assert_eq!(lab.gatekeeper.registrations().len(), 1);
}

/// Region 1 (home) spills to its direct regions 2 and 3 in ascending order although the
/// link to 3 is listed first, then to indirect region 4 (`agl = true`); indirect region 5
/// (`agl = false`) is never used.
const SPILL: &str = r#"
[gatekeeper]
seed = 3
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[region]]
id = 2
[[region]]
id = 3
[[region]]
id = 4
[[region]]
id = 5
[[link]]
regions = [1, 3]
kind = "direct"
[[link]]
regions = [1, 2]
kind = "direct"
[[link]]
regions = [1, 4]
kind = "indirect"
agl = true
[[link]]
regions = [1, 5]
kind = "indirect"
agl = false
[[clan]]
name = "r1-a"
region = 1
address = "127.0.1.1:1719"
max_sockets = 1
[[clan]]
name = "r1-b"
region = 1
address = "127.0.1.2:1719"
max_sockets = 1
[[clan]]
name = "r5"
region = 5
address = "127.0.1.50:1719"
max_sockets = 9
[[clan]]
name = "r4"
region = 4
address = "127.0.1.40:1719"
max_sockets = 1
[[clan]]
name = "r3"
region = 3
address = "127.0.1.30:1719"
max_sockets = 1
[[clan]]
name = "r2"
region = 2
address = "127.0.1.20:1719"
max_sockets = 1
"#;

#[test]
fn a_full_region_spills_direct_ascending_then_indirect_then_grj() {
    let mut lab = Lab::new(SPILL);
    let mut order = Vec::new();
    for n in 1..=5 {
        let mut p = phone(1, n);
        let clan = lab.register(&mut p);
        order.push(lab.name_of(clan));
    }
    assert_eq!(order, ["r1-a", "r1-b", "r2", "r3", "r4"]);
    let mut last = phone(1, 6);
    assert_eq!(reason(lab.grq(&mut last)), "resourceUnavailable");
    assert_eq!(
        lab.clan("r5").sockets,
        0,
        "agl = false region never offered"
    );
    // The cap is never exceeded: an RRQ at a full C-LAN is refused, with nowhere to go.
    match lab.rrq_at(addr("127.0.1.1:1719"), &mut last) {
        Answer::Rrj {
            reason, alternates, ..
        } => {
            assert_eq!(reason, "resourceUnavailable");
            assert!(alternates.is_empty());
        }
        other => panic!("RRJ expected, got {other:?}"),
    }
    assert!(lab.clans().iter().all(|c| c.sockets <= c.max_sockets));
}

#[test]
fn rrq_at_a_full_clan_names_where_section_1_would_send_the_phone() {
    let mut lab = Lab::new(SPILL);
    let mut first = phone(1, 1);
    lab.register(&mut first); // r1-a is full now
    let mut second = phone(1, 2);
    match lab.rrq_at(addr("127.0.1.1:1719"), &mut second) {
        Answer::Rrj {
            reason, alternates, ..
        } => {
            assert_eq!(reason, "resourceUnavailable");
            assert_eq!(alternates, vec![addr("127.0.1.2:1719")]);
        }
        other => panic!("RRJ expected, got {other:?}"),
    }
    assert_eq!(
        lab.gatekeeper.registrations().len(),
        1,
        "a reject changes nothing"
    );
}

#[test]
fn a_full_rrq_at_the_discovery_address_needs_discovery() {
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    assert_eq!(
        reason(lab.rrq_at(addr(DISCOVERY), &mut p)),
        "discoveryRequired"
    );
    // A keep-alive of a registered phone is served wherever it arrives.
    lab.register(&mut p);
    let keep_alive = p.keep_alive().unwrap();
    assert!(matches!(
        lab.ask(addr(DISCOVERY), &mut p, &keep_alive),
        Answer::Rcf { .. }
    ));
}

/// Two regions with two C-LANs each; phones of region 1 get region-1 C-LANs and an AGL.
const TWO_REGIONS: &str = r#"
[gatekeeper]
seed = 11
[agl]
home = 2
direct = 2
indirect = 0
max = 16
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[region]]
id = 2
networks = ["127.2.0.0/16"]
[[link]]
regions = [1, 2]
kind = "direct"
[[clan]]
name = "a1"
region = 1
address = "127.0.1.1:1719"
[[clan]]
name = "a2"
region = 1
address = "127.0.1.2:1719"
[[clan]]
name = "b1"
region = 2
address = "127.0.1.21:1719"
[[clan]]
name = "b2"
region = 2
address = "127.0.1.22:1719"
[[tts]]
aliases = ["7*"]
tts = true
"#;

#[test]
fn a_clan_out_of_service_sends_its_phones_elsewhere() {
    let mut lab = Lab::new(TWO_REGIONS);
    let mut phones: Vec<Phone> = (1..=6).map(|n| phone(1, n)).collect();
    for p in &mut phones {
        lab.register(p);
    }
    assert_eq!(lab.clan("a1").sockets, 3);
    assert_eq!(lab.clan("a2").sockets, 3);
    let a1 = lab.gatekeeper.clan_by_name("a1").unwrap();
    let urqs = lab.gatekeeper.set_in_service(lab.now, a1, false);
    assert_eq!(urqs.len(), 3, "one URQ per phone on a1");
    assert_eq!(lab.clan("a1").sockets, 0);
    assert!(!lab.clan("a1").in_service);
    assert_eq!(lab.gatekeeper.registrations().len(), 3);
    for urq in urqs {
        assert_eq!(
            urq.local,
            addr("127.0.1.1:1719"),
            "sent by the C-LAN they registered at"
        );
        let p = phones.iter_mut().find(|p| p.ras_address == urq.to).unwrap();
        let Answer::Urq { seq, agl, .. } = Answer::read(&urq.payload).unwrap() else {
            panic!("URQ expected");
        };
        assert!(
            !agl.contains(&addr("127.0.1.1:1719")),
            "the new AGL leaves a1 out"
        );
        assert_eq!(
            agl.len(),
            3,
            "a2 from home, b1 and b2 from the direct region"
        );
        // The phone confirms and registers at the first entry of its new AGL.
        let ucf = p.ucf(seq);
        assert!(lab.send(urq.local, p, &ucf).is_empty());
        assert!(matches!(lab.rrq_at(agl[0], p), Answer::Rcf { .. }));
    }
    assert_eq!(lab.gatekeeper.registrations().len(), 6);
    assert_eq!(lab.clan("a1").sockets, 0);
    assert_eq!(lab.clans().iter().map(|c| c.sockets).sum::<u32>(), 6);
    // Answered URQs are not sent again.
    assert!(lab.at(10).is_empty());
    // Back in service: no rebalancing.
    let out = lab.gatekeeper.set_in_service(lab.now, a1, true);
    assert!(out.is_empty());
    assert_eq!(lab.clan("a1").sockets, 0);
}

/// The H323Plus case: a phone unregistered by a gatekeeper URQ (its C-LAN out of service)
/// re-registers at the next C-LAN of its AGL with a full RRQ that still carries its old
/// `endpointIdentifier`; the RCF gives it that identifier back, and the next URQ names it.
/// The same RRQ from another address while the identifier is held: RRJ securityDenial.
#[test]
fn a_phone_keeps_its_endpoint_identifier_across_a_gatekeeper_urq() {
    let mut lab = Lab::new(TWO_REGIONS);
    let mut p = phone(1, 1);
    p.keeps_endpoint_id = true;
    let first_clan = lab.register(&mut p);
    let id = p.endpoint_id.as_ref().unwrap().text();
    let clan = lab.name_of(first_clan);
    let out =
        lab.gatekeeper
            .set_in_service(lab.now, lab.gatekeeper.clan_by_name(&clan).unwrap(), false);
    let Answer::Urq {
        seq,
        agl,
        endpoint_id,
    } = Answer::read(&out[0].payload).unwrap()
    else {
        panic!("URQ expected");
    };
    assert_eq!(endpoint_id.as_deref(), Some(id.as_str()));
    let ucf = p.ucf(seq);
    assert!(lab.send(out[0].local, &p, &ucf).is_empty());
    assert_eq!(p.endpoint_id.as_ref().map(|e| e.text()), Some(id.clone()));
    // The full RRQ at the next AGL entry carries the old identifier and gets it back.
    let next = agl[0];
    match lab.rrq_at(next, &mut p) {
        Answer::Rcf { endpoint_id, .. } => assert_eq!(endpoint_id, id, "the identifier it kept"),
        other => panic!("RCF expected, got {other:?}"),
    }
    let registrations = lab.gatekeeper.registrations();
    assert_eq!(registrations.len(), 1);
    assert_eq!(registrations[0].endpoint_id, id);
    // Its keep-alives and the next URQ name the identifier it holds.
    let keep_alive = p.keep_alive().unwrap();
    assert!(matches!(
        lab.ask(next, &mut p, &keep_alive),
        Answer::Rcf { .. }
    ));
    let next_clan = lab.gatekeeper.clan_by_name(&lab.name_of(next)).unwrap();
    let out = lab.gatekeeper.set_in_service(lab.now, next_clan, false);
    let Answer::Urq {
        seq, endpoint_id, ..
    } = Answer::read(&out[0].payload).unwrap()
    else {
        panic!("URQ expected");
    };
    assert_eq!(endpoint_id.as_deref(), Some(id.as_str()));
    let ucf = p.ucf(seq);
    assert!(lab.send(out[0].local, &p, &ucf).is_empty());
    // Registered again; another phone sending the same RRQ (the same identifier) from
    // another address is refused while the identifier is held.
    let b1 = lab.clan("b1").address;
    assert!(matches!(lab.rrq_at(b1, &mut p), Answer::Rcf { .. }));
    let mut impostor = phone(1, 2);
    impostor.keeps_endpoint_id = true;
    impostor.aliases = p.aliases.clone();
    impostor.endpoint_id = p.endpoint_id.clone();
    assert_eq!(reason(lab.rrq_at(b1, &mut impostor)), "securityDenial");
    impostor.aliases = phone(1, 2).aliases;
    assert_eq!(reason(lab.rrq_at(b1, &mut impostor)), "securityDenial");
    assert_eq!(lab.gatekeeper.registrations().len(), 1);
    // Once the holder is gone, the identifier is free to take.
    let urq = p.urq();
    assert!(matches!(lab.ask(b1, &mut p, &urq), Answer::Ucf { .. }));
    match lab.rrq_at(b1, &mut impostor) {
        Answer::Rcf { endpoint_id, .. } => assert_eq!(endpoint_id, id),
        other => panic!("RCF expected, got {other:?}"),
    }
}

/// An identifier brought back that rasgk has not handed out yet (it ran before without a
/// state file) is taken, and no later endpoint gets it, nor one after a restart from the
/// state file; one that is not of rasgk's form, or too large, gets a new identifier.
#[test]
fn kept_endpoint_identifiers_stay_unique_across_restarts() {
    let mut lab = Lab::new(TWO_REGIONS);
    let a1 = lab.clan("a1").address;
    let register_keeping = |lab: &mut Lab, n: u8, id: &str| {
        let mut p = phone(1, n);
        p.keeps_endpoint_id = true;
        p.endpoint_id = Some(rasgk::ras::reply::EndpointId::new(id).unwrap());
        lab.grq(&mut p);
        match lab.rrq_at(a1, &mut p) {
            Answer::Rcf { endpoint_id, .. } => endpoint_id,
            other => panic!("RCF expected, got {other:?}"),
        }
    };
    assert_eq!(register_keeping(&mut lab, 1, "EP00000005"), "EP00000005");
    let mut fresh = phone(1, 2);
    lab.register(&mut fresh);
    assert_eq!(
        fresh.endpoint_id.unwrap().text(),
        "EP00000006",
        "past the kept one"
    );
    assert_eq!(
        register_keeping(&mut lab, 3, "gk1_endp_42"),
        "EP00000007",
        "not ours"
    );
    assert_eq!(
        register_keeping(&mut lab, 4, "EP100000000"),
        "EP00000008",
        "above EPFFFFFFFF"
    );
    assert_eq!(register_keeping(&mut lab, 5, "EP00000040"), "EP00000040");
    // A restart from the state file hands out none of them again.
    let state = lab.gatekeeper.snapshot_state(lab.now);
    assert_eq!(state.last_key, 0x40);
    let config = config::from_toml(TWO_REGIONS, "scenario.toml").unwrap();
    let (restarted, _) =
        Gatekeeper::restore(config, &state, lab.now, Duration::from_secs(1_700_000_000)).unwrap();
    lab.gatekeeper = restarted;
    let mut after = phone(1, 6);
    lab.register(&mut after);
    assert_eq!(after.endpoint_id.unwrap().text(), "EP00000041");
}

#[test]
fn unanswered_urqs_are_sent_again_then_given_up() {
    let mut lab = Lab::new(TWO_REGIONS);
    let mut p = phone(1, 1);
    lab.register(&mut p);
    let a1 = lab.gatekeeper.clan_by_name("a1").unwrap();
    let first = lab.gatekeeper.set_in_service(lab.now, a1, false);
    assert_eq!(first.len(), 1);
    assert_eq!(lab.at(3), first, "again after 3 s");
    assert_eq!(lab.at(6), first, "and again after 6 s");
    assert!(lab.at(9).is_empty(), "three attempts in all");
}

#[test]
fn a_tts_phone_gets_its_socket_on_an_agl_entry() {
    let mut lab = Lab::new(TWO_REGIONS);
    // Load a1 so the TTS socket goes to a2 (least loaded among the home/direct entries).
    for n in 1..=2 {
        let mut p = phone(1, n);
        let at = lab.clan("a1").address;
        lab.grq(&mut p);
        assert!(matches!(lab.rrq_at(at, &mut p), Answer::Rcf { .. }));
    }
    let mut tts = Phone::extension(70_001, addr("127.1.0.77:5000"));
    let clan = match lab.grq(&mut tts) {
        Answer::Gcf {
            ras_address: Some(clan),
            ..
        } => clan,
        other => panic!("{other:?}"),
    };
    let agl = match lab.rrq_at(clan, &mut tts) {
        Answer::Rcf { agl, .. } => agl,
        other => panic!("{other:?}"),
    };
    assert_eq!(agl.len(), 4);
    let registration = lab
        .gatekeeper
        .registrations()
        .into_iter()
        .find(|r| r.tts)
        .expect("the 7… phone is TTS");
    let socket = registration.clan.expect("a socket was placed");
    let socket_address = lab.clan(&socket).address;
    assert!(agl.contains(&socket_address));
    // All four are priority 1 and a2, b1, b2 are empty: home and direct entries form one
    // group, so AGL order decides, and the home entries come first.
    assert_eq!(socket, "a2");
    assert_eq!(lab.clan("a2").reserved, 0, "the TTS phone reserved nothing");
    assert_eq!(lab.clan("a2").sockets, 1);
}

/// A phone known to be TTS at its GRQ takes no reservation (docs/rules.md §4.3): by its GRQ's
/// aliases, or by a region rule when its GRQ has none; a phone whose GRQ cannot tell (no
/// aliases, and an alias rule comes first) reserves as any phone does.
#[test]
fn a_phone_tts_at_its_grq_takes_no_reservation() {
    let toml = TWO_REGIONS.replace(
        "[[tts]]\naliases = [\"7*\"]",
        "[[tts]]\nregions = [2]\ntts = true\n[[tts]]\naliases = [\"7*\"]",
    );
    let mut lab = Lab::new(&toml);
    let reserved = |lab: &Lab| lab.clans().iter().map(|c| c.reserved).sum::<u32>();
    // By its alias: a GCF, no reservation.
    let mut by_alias = Phone::extension(70_001, addr("127.1.0.77:5000"));
    assert!(matches!(lab.grq(&mut by_alias), Answer::Gcf { .. }));
    assert_eq!(reserved(&lab), 0, "a TTS phone's GCF reserves nothing");
    assert_eq!(lab.gatekeeper.stats().gcf_tts, 1);
    // By its region, without aliases.
    let mut by_region = Phone::new(Vec::new(), addr("127.2.0.77:5000"));
    assert!(matches!(lab.grq(&mut by_region), Answer::Gcf { .. }));
    assert_eq!(reserved(&lab), 0, "a region rule makes it TTS");
    // Region 1 without aliases: the alias rule might match its RRQ, so it reserves.
    let mut unknown = Phone::new(Vec::new(), addr("127.1.0.78:5000"));
    assert!(matches!(lab.grq(&mut unknown), Answer::Gcf { .. }));
    assert_eq!(reserved(&lab), 1, "not known as TTS: a reservation");
    // A non-TTS phone reserves.
    let mut other = phone(1, 1);
    assert!(matches!(lab.grq(&mut other), Answer::Gcf { .. }));
    assert_eq!(reserved(&lab), 2);
    // The TTS phone registers where its GCF sent it; its socket goes by docs/rules.md §7.
    let clan = lab.register(&mut by_alias);
    assert!(lab.clans().iter().any(|c| c.address == clan));
    let registration = lab
        .gatekeeper
        .registrations()
        .into_iter()
        .find(|r| r.tts)
        .expect("registered as TTS");
    assert!(registration.clan.is_some(), "its socket was placed");
    assert_eq!(reserved(&lab), 2, "the others' reservations stay");
}

/// Two equal C-LANs and a burst of 500 phones, 30 % of them TTS (every GRQ, then every
/// RRQ): the non-TTS phones split over the two within one, as without the TTS phones; in
/// count mode and in socket mode (where the core holds each phone's place from its RCF on).
#[test]
fn a_burst_with_tts_phones_splits_non_tts_phones_evenly() {
    for sockets in ["count", "tcp"] {
        let toml = TWO_EQUAL.replace("seed = 3", &format!("seed = 3\nsockets = {sockets:?}"));
        let config = config::from_toml(&toml, "two.toml").unwrap();
        let mut phones = rasgk::bench::placement::phones([127, 1], 500, 30);
        let ended = rasgk::bench::placement::burst(config, &mut phones).unwrap();
        assert_eq!(ended.refused, 0, "{sockets}");
        let (a, b) = (ended.non_tts_on("a"), ended.non_tts_on("b"));
        assert_eq!(a + b, 350, "{sockets}: {ended:?}");
        assert!(
            a.abs_diff(b) <= 1,
            "{sockets}: non-TTS phones split {a}/{b}"
        );
        let tts: u32 = ended.clans.iter().map(|&(_, _, tts)| tts).sum();
        assert_eq!(tts, 150, "{sockets}: {ended:?}");
    }
}

const TWO_EQUAL: &str = r#"
[gatekeeper]
seed = 3
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[clan]]
name = "a"
region = 1
address = "127.0.1.1:1719"
[[clan]]
name = "b"
region = 1
address = "127.0.1.2:1719"
[[tts]]
aliases = ["5*"]
"#;

/// The issue's burst: 2,000 region-1 phones, 30 % TTS, on the default topology. No
/// non-TTS phone is in another region or on a priority-2 board while a priority-1 board of
/// region 1 has room, and each C-LAN holds as many non-TTS phones as without the TTS
/// phones.
#[test]
fn a_burst_with_tts_phones_places_non_tts_phones_by_the_rules() {
    let placement = rasgk::bench::placement::measure(2_000).unwrap();
    let ended = &placement.with_tts;
    assert_eq!(ended.refused, 0);
    let config = config::embedded_default();
    let priority_1_room = config
        .clans
        .iter()
        .filter(|clan| clan.region == 1 && clan.priority == 1)
        .any(|clan| {
            let (_, non_tts, tts) = ended.clans.iter().find(|(n, ..)| *n == clan.name).unwrap();
            non_tts + tts < clan.max_sockets
        });
    let elsewhere: u32 = config
        .clans
        .iter()
        .filter(|clan| clan.region != 1 || clan.priority != 1)
        .map(|clan| ended.non_tts_on(&clan.name))
        .sum();
    assert!(
        !(priority_1_room && elsewhere > 0),
        "{elsewhere} non-TTS phones elsewhere while a priority-1 board has room: {ended:?}"
    );
    assert_eq!(ended.non_tts_on("clan-1a"), 480);
    assert_eq!(ended.non_tts_on("clan-1b"), 480);
    for region in [2, 3] {
        for clan in config.clans.iter().filter(|c| c.region == region) {
            assert_eq!(ended.non_tts_on(&clan.name), 0, "{}", clan.name);
        }
    }
    assert_eq!(
        placement.with_tts.clans.len(),
        placement.without_tts.clans.len()
    );
    for (with, without) in placement
        .with_tts
        .clans
        .iter()
        .zip(&placement.without_tts.clans)
    {
        assert_eq!(with.1, without.1, "non-TTS phones on {}", with.0);
    }
}

/// A gateway takes no socket: in a full system it still gets its GCF and RCF, and the
/// C-LAN's load stays what the phones hold.
#[test]
fn a_gateway_registers_in_a_full_system_without_a_socket() {
    let mut lab = Lab::new(
        r#"
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[clan]]
name = "only"
region = 1
address = "127.0.1.1:1719"
max_sockets = 1
"#,
    );
    let mut first = phone(1, 1);
    lab.register(&mut first);
    let mut second = phone(1, 2);
    assert_eq!(reason(lab.grq(&mut second)), "resourceUnavailable");
    let mut gateway = Phone::new(
        vec![rasgk::ras::Alias::h323_id("gw").unwrap()],
        addr("127.1.0.99:1719"),
    );
    gateway.gateway = true;
    assert_eq!(lab.register(&mut gateway), addr("127.0.1.1:1719"));
    assert_eq!(lab.loads(), vec![(1, 0)], "the phone's socket only");
    assert_eq!(lab.gatekeeper.registrations().len(), 2);
}

#[test]
fn a_tts_phone_without_room_waits_for_a_socket() {
    let mut lab = Lab::new(
        r#"
[gatekeeper]
tts_default = true
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[clan]]
name = "only"
region = 1
address = "127.0.1.1:1719"
max_sockets = 1
"#,
    );
    let only = addr("127.0.1.1:1719");
    let mut first = phone(1, 1);
    let mut second = phone(1, 2);
    lab.register(&mut first);
    // The C-LAN is full: the second TTS phone still registers, with no socket and no AGL.
    match lab.rrq_at(only, &mut second) {
        Answer::Rcf { agl, .. } => assert!(agl.is_empty()),
        other => panic!("RCF expected, got {other:?}"),
    }
    assert_eq!(lab.gatekeeper.snapshot().tts_pending, 1);
    assert_eq!(lab.clan("only").sockets, 1);
    // The first phone leaves; the retry places the second one's socket.
    let urq = first.urq();
    lab.ask(only, &mut first, &urq);
    lab.at(1);
    assert_eq!(lab.gatekeeper.snapshot().tts_pending, 0);
    assert_eq!(lab.clan("only").sockets, 1);
    // Its AGL was built anew for the socket; the next RCF carries it.
    let keep_alive = second.keep_alive().unwrap();
    match lab.ask(only, &mut second, &keep_alive) {
        Answer::Rcf { agl, .. } => assert_eq!(agl, vec![only]),
        other => panic!("RCF expected, got {other:?}"),
    }
}

#[test]
fn pooled_tiers_take_the_least_loaded_across_regions() {
    let pooled = TWO_REGIONS.replace("seed = 11", "seed = 11\ntier_mode = \"pooled\"");
    let mut lab = Lab::new(&pooled);
    // Fill region 1 completely (cap 480 would take long: lower the caps).
    for name in ["a1", "a2"] {
        let idx = lab.gatekeeper.clan_by_name(name).unwrap();
        lab.gatekeeper.set_cap(idx, 1);
    }
    let b1 = lab.gatekeeper.clan_by_name("b1").unwrap();
    lab.gatekeeper.set_cap(b1, 5);
    let mut names = Vec::new();
    for n in 1..=6 {
        let mut p = phone(1, n);
        let clan = lab.register(&mut p);
        names.push(lab.name_of(clan));
    }
    // Home first (a1, a2), then the direct tier pooled: b1 and b2 alternate by load.
    assert_eq!(names, ["a1", "a2", "b1", "b2", "b1", "b2"]);
}

#[test]
fn a_cap_below_the_load_refuses_new_work_and_drops_nobody() {
    let mut lab = Lab::new(ONE_REGION);
    let a = addr("127.0.1.1:1719");
    for n in 1..=3 {
        let mut p = phone(1, n);
        lab.rrq_at(a, &mut p);
    }
    let idx = lab.gatekeeper.clan_by_name("a").unwrap();
    lab.gatekeeper.set_cap(idx, 2);
    assert_eq!(lab.clan("a").sockets, 3, "nobody dropped");
    let mut late = phone(1, 9);
    match lab.rrq_at(a, &mut late) {
        Answer::Rrj {
            reason, alternates, ..
        } => {
            assert_eq!(reason, "resourceUnavailable");
            assert_eq!(alternates, vec![addr("127.0.1.2:1719")]);
        }
        other => panic!("RRJ expected, got {other:?}"),
    }
    assert_eq!(
        lab.grq(&mut late),
        Answer::Gcf {
            seq: late.last_seq(),
            ras_address: Some(addr("127.0.1.2:1719"))
        }
    );
}

#[test]
fn an_irr_asking_for_a_response_gets_iack_or_inak() {
    use rasgk::ras::{self, request, MessageKind, RasMessage};
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    let clan = lab.register(&mut p);
    let irr = |seq: u16, endpoint_id: &rasgk::ras::reply::EndpointId, need_response: bool| {
        let mut message = request::info_request_response(
            seq,
            endpoint_id,
            p.ras_address,
            p.call_signal_address,
            &p.aliases,
            true,
        );
        if let RasMessage::infoRequestResponse(irr) = &mut message {
            irr.need_response = Some(need_response);
        }
        ras::encode(&message).unwrap()
    };
    let own = p.endpoint_id.clone().unwrap();
    let kind = |out: Vec<Transmit>| match Answer::read(&out[0].payload).unwrap() {
        Answer::Other { kind, .. } => kind,
        other => panic!("{other:?}"),
    };
    assert!(
        lab.send(clan, &p, &irr(900, &own, false)).is_empty(),
        "no response asked"
    );
    assert_eq!(
        kind(lab.send(clan, &p, &irr(901, &own, true))),
        MessageKind::Iack
    );
    let stranger = rasgk::ras::reply::EndpointId::new("EP00000099").unwrap();
    assert_eq!(
        kind(lab.send(clan, &p, &irr(902, &stranger, true))),
        MessageKind::Inak
    );
}

#[test]
fn repeated_requests_do_not_grow_the_timers() {
    let mut lab = Lab::new(ONE_REGION);
    let mut registered = phone(1, 1);
    let clan = lab.register(&mut registered);
    let mut stranger = phone(1, 2);
    for _ in 0..5_000 {
        let keep_alive = registered.keep_alive().unwrap();
        lab.send(clan, &registered, &keep_alive);
        let grq = stranger.grq();
        lab.send(addr(DISCOVERY), &stranger, &grq);
    }
    // One registration and one reservation: two deadlines, however often they moved.
    assert_eq!(lab.gatekeeper.timer_count(), 2);
    assert_eq!(lab.clans().iter().map(|c| c.reserved).sum::<u32>(), 1);
    lab.at(30);
    assert_eq!(lab.gatekeeper.timer_count(), 1, "the reservation expired");
    lab.at(300);
    assert_eq!(lab.gatekeeper.timer_count(), 0, "the registration expired");
}

#[test]
fn drq_and_brq_are_answered_for_registered_endpoints_only() {
    use rasgk::ras::{self, request, MessageKind};
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    let clan = lab.register(&mut p);
    let own = p.endpoint_id.clone().unwrap();
    let stranger = rasgk::ras::reply::EndpointId::new("EP00000099").unwrap();
    let call = || request::Call {
        call_reference_value: 1,
        conference_id: [7; 16],
        call_id: [8; 16],
    };
    let kind = |out: Vec<Transmit>| match Answer::read(&out[0].payload).unwrap() {
        Answer::Other { kind, .. } => kind,
        other => panic!("{other:?}"),
    };
    let brq = |seq, id| ras::encode(&request::bandwidth_request(seq, id, call(), 640)).unwrap();
    let drq = |seq, id| ras::encode(&request::disengage_request(seq, id, call())).unwrap();
    assert_eq!(kind(lab.send(clan, &p, &brq(800, &own))), MessageKind::Bcf);
    assert_eq!(
        kind(lab.send(clan, &p, &brq(801, &stranger))),
        MessageKind::Brj
    );
    assert_eq!(kind(lab.send(clan, &p, &drq(802, &own))), MessageKind::Dcf);
    assert_eq!(
        kind(lab.send(clan, &p, &drq(803, &stranger))),
        MessageKind::Drj
    );
    // A registered endpoint's id from another source is not that endpoint.
    let other = phone(1, 2);
    assert_eq!(
        kind(lab.send(clan, &other, &drq(804, &own))),
        MessageKind::Drj
    );
}

#[test]
fn events_placement_regions_and_admin_unregister() {
    use rasgk::gatekeeper::events::{Ending, Event};
    let mut lab = Lab::new(TWO_REGIONS);
    // Dry run first: it must not change what the real phone then gets.
    let before = lab.gatekeeper.snapshot();
    let ip = "127.1.0.1".parse().unwrap();
    let placement = lab.gatekeeper.placement(ip, &phone(1, 1).aliases);
    let again = lab.gatekeeper.placement(ip, &phone(1, 1).aliases);
    assert_eq!(
        placement, again,
        "a dry run draws from a copy of the generator"
    );
    assert_eq!(
        lab.gatekeeper.snapshot(),
        before,
        "a dry run changes nothing"
    );
    let mut p = phone(1, 1);
    let clan = lab.register(&mut p);
    assert_eq!(placement.gcf.as_deref(), Some(lab.name_of(clan).as_str()));
    assert_eq!(placement.socket, placement.gcf);
    let agl: Vec<String> = lab.gatekeeper.registrations()[0].agl.clone();
    assert_eq!(
        placement.agl, agl,
        "the dry run's AGL is the one the RCF carried"
    );
    assert_eq!(placement.region, 1);
    assert!(!placement.tts);

    let events = lab.gatekeeper.drain_events();
    assert!(
        matches!(
            &events[..],
            [Event::Registered {
                tts: false,
                region: 1,
                ..
            }]
        ),
        "{events:?}"
    );
    assert!(lab.gatekeeper.drain_events().is_empty(), "drained");
    assert_eq!(lab.gatekeeper.stats().registration_latency.count, 1);

    // A phone of region 1 registered at a region-2 C-LAN spills to region 2.
    let mut spilled = phone(1, 2);
    lab.rrq_at(addr("127.0.1.21:1719"), &mut spilled);
    let regions = lab.gatekeeper.regions();
    assert_eq!(regions[0].home_phones, 2);
    assert_eq!(regions[0].spill_to.get(&2), Some(&1));
    assert_eq!(regions[1].spill_from.get(&1), Some(&1));
    assert_eq!(regions[1].sockets, 1);
    assert_eq!(regions[0].direct, vec![2]);

    // Unregistered by the administrator: URQ (maintenance), socket freed, event.
    let id = spilled.endpoint_id.as_ref().unwrap().text();
    let urq = lab.gatekeeper.unregister_endpoint(lab.now, &id).unwrap();
    assert_eq!(urq.len(), 1);
    assert_eq!(urq[0].to, spilled.ras_address);
    assert!(matches!(
        Answer::read(&urq[0].payload).unwrap(),
        Answer::Urq { .. }
    ));
    assert_eq!(lab.clan("b1").sockets, 0);
    assert!(lab.gatekeeper.unregister_endpoint(lab.now, &id).is_err());
    let events = lab.gatekeeper.drain_events();
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Unregistered {
            reason: Ending::Admin,
            ..
        }
    )));
}

#[test]
fn a_registered_phone_starting_over_keeps_its_place_in_a_full_system() {
    let mut lab = Lab::new(&ONE_REGION.replace("max_sockets = 10", "max_sockets = 1"));
    let mut phones: Vec<Phone> = (1..=3).map(|n| phone(1, n)).collect();
    for p in &mut phones {
        lab.register(p);
    }
    let mut late = phone(1, 9);
    assert_eq!(reason(lab.grq(&mut late)), "resourceUnavailable");
    // Phone 2 lost its RCF and starts over: its own socket is its room.
    let before = lab.loads();
    let again = match lab.grq(&mut phones[1]) {
        Answer::Gcf {
            ras_address: Some(clan),
            ..
        } => clan,
        other => panic!("GCF expected, got {other:?}"),
    };
    assert_eq!(lab.name_of(again), "b");
    assert_eq!(
        lab.loads(),
        before,
        "no reservation on top of its own socket"
    );
    assert!(matches!(
        lab.rrq_at(again, &mut phones[1]),
        Answer::Rcf { .. }
    ));
    assert_eq!(lab.loads(), before);
    assert_eq!(lab.gatekeeper.registrations().len(), 3);
}

/// ONE_REGION with a `[limits]` table.
fn limited(limits: &str) -> String {
    format!("{ONE_REGION}\n[limits]\n{limits}\n")
}

#[test]
fn bad_datagrams_are_counted_by_kind_and_answered_when_their_seq_reads() {
    use rasgk::gatekeeper::stats::{BadDatagram, BadDatagramCount};
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    lab.register(&mut p);
    let before = lab.gatekeeper.snapshot();
    let discovery = addr(DISCOVERY);
    let grq = p.grq();
    let mut flipped = grq.clone();
    // Bit 37 is in rasAddress's CHOICE index: 17 names no TransportAddress alternative.
    flipped[4] ^= 0x04;
    let cases: [(&[u8], BadDatagram, bool); 7] = [
        (b"", BadDatagram::Empty, false),
        (&[0u8; 9000], BadDatagram::Oversized, false),
        (b"\x7f\x00\x00", BadDatagram::UnknownMessage, false),
        (b"\x80", BadDatagram::Truncated, false),
        (&grq[..grq.len() / 2], BadDatagram::Truncated, true),
        (&flipped, BadDatagram::Invalid, true),
        (
            &[&grq[..], b"\x00"].concat(),
            BadDatagram::TrailingData,
            true,
        ),
    ];
    for (datagram, kind, xrs) in cases {
        let out = lab.send(discovery, &p, datagram);
        assert_eq!(out.len(), usize::from(xrs), "{kind:?}: {out:?}");
        if xrs {
            assert!(matches!(
                Answer::read(&out[0].payload).unwrap(),
                Answer::Other { kind: rasgk::ras::MessageKind::Xrs, seq } if seq == p.last_seq()
            ));
        }
    }
    let stats = lab.gatekeeper.stats();
    let counted: Vec<(BadDatagram, BadDatagramCount)> = BadDatagram::ALL
        .iter()
        .map(|&kind| (kind, stats.malformed_of(kind)))
        .collect();
    let count = |answered, dropped| BadDatagramCount { answered, dropped };
    assert_eq!(
        counted,
        [
            (BadDatagram::Empty, count(0, 1)),
            (BadDatagram::Oversized, count(0, 1)),
            (BadDatagram::UnknownMessage, count(0, 1)),
            (BadDatagram::Truncated, count(1, 1)),
            (BadDatagram::Invalid, count(1, 0)),
            (BadDatagram::TrailingData, count(1, 0)),
        ]
    );
    assert_eq!(stats.decode_failures, 7);
    assert_eq!(lab.gatekeeper.snapshot(), before);
}

#[test]
fn a_source_over_its_rate_is_dropped_unread() {
    let mut lab = Lab::new(&limited("rate_per_source = 2\nburst_per_source = 3"));
    let mut p = phone(1, 1);
    // The same IP on another port shares the bucket; another IP has its own.
    let mut same_host = Phone::extension(60_900, SocketAddr::from(([127, 1, 0, 1], 5001)));
    let mut other = phone(1, 2);
    let answered = (0..10)
        .filter(|_| {
            let grq = p.grq();
            !lab.send(addr(DISCOVERY), &p, &grq).is_empty()
        })
        .count();
    assert_eq!(answered, 3, "the burst");
    let grq = same_host.grq();
    assert!(lab.send(addr(DISCOVERY), &same_host, &grq).is_empty());
    assert!(matches!(lab.grq(&mut other), Answer::Gcf { .. }));
    assert_eq!(lab.gatekeeper.stats().rate_limited, 8);
    // Two tokens a second: one second later, two more.
    lab.at(1);
    let answered = (0..5)
        .filter(|_| {
            let grq = p.grq();
            !lab.send(addr(DISCOVERY), &p, &grq).is_empty()
        })
        .count();
    assert_eq!(answered, 2);
    assert_eq!(lab.gatekeeper.counts().rate_limit_sources, 2);
}

#[test]
fn at_the_reservation_cap_the_oldest_reservation_makes_room() {
    let mut lab = Lab::new(&limited("max_reservations = 2"));
    let mut phones: Vec<Phone> = (1..=3).map(|n| phone(1, n)).collect();
    for p in &mut phones {
        lab.at(1);
        assert!(matches!(lab.grq(p), Answer::Gcf { .. }));
    }
    assert_eq!(lab.gatekeeper.counts().reservations, 2);
    assert_eq!(lab.gatekeeper.stats().reservations_dropped, 1);
    let reserved: u32 = lab.clans().iter().map(|c| c.reserved).sum();
    assert_eq!(reserved, 2, "the dropped reservation's place is free again");
    // The first phone lost its reservation, not its chance: its RRQ finds room.
    let clan = addr("127.0.1.1:1719");
    assert!(matches!(
        lab.rrq_at(clan, &mut phones[0]),
        Answer::Rcf { .. }
    ));
    assert_eq!(
        lab.gatekeeper.counts().timers,
        3,
        "2 reservations, 1 registration"
    );
}

#[test]
fn the_retransmission_cache_cap_drops_the_oldest_reply() {
    let mut lab = Lab::new(&limited("max_cached_replies = 2"));
    let mut phones: Vec<Phone> = (1..=3).map(|n| phone(1, n)).collect();
    for p in &mut phones {
        lab.grq(p);
    }
    let counts = lab.gatekeeper.counts();
    assert_eq!(
        (counts.cached_replies, counts.cached_replies_evicted),
        (2, 1)
    );
}

#[test]
fn replies_to_unregistered_sources_stay_within_the_reflection_bound() {
    let long_id = "g".repeat(100);
    let toml = format!(
        r#"
[gatekeeper]
seed = 1
gatekeeper_id = "{long_id}"
[limits]
reflection_ratio = 1
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[clan]]
name = "a"
region = 1
address = "127.0.1.1:1719"
max_sockets = 1
[[clan]]
name = "b"
region = 1
address = "127.0.1.2:1719"
max_sockets = 1
"#
    );
    let mut lab = Lab::new(&toml);
    let (a, b) = (addr("127.0.1.1:1719"), addr("127.0.1.2:1719"));
    let mut first = phone(1, 1);
    // A GCF with a 100-character gatekeeperIdentifier is 7 times a 32-octet GRQ: it goes
    // without the identifier, still naming the C-LAN.
    let grq = first.grq();
    let out = lab.send(addr(DISCOVERY), &first, &grq);
    assert_eq!(out.len(), 1);
    assert!(
        out[0].payload.len() <= grq.len(),
        "{}",
        out[0].payload.len()
    );
    let gcf = Answer::read(&out[0].payload).unwrap();
    assert_eq!(
        gcf,
        Answer::Gcf {
            seq: first.last_seq(),
            ras_address: Some(a)
        }
    );
    first.learn(&gcf);
    // Registered, a phone gets everything: an RCF whose AGL names b with the long id.
    let rrq = first.rrq();
    let out = lab.send(a, &first, &rrq);
    assert!(out[0].payload.len() > rrq.len());
    assert!(matches!(
        Answer::read(&out[0].payload).unwrap(),
        Answer::Rcf { .. }
    ));
    // An unregistered phone's RRQ at the full a: RRJ without its altGKInfo naming b.
    let mut second = phone(1, 2);
    let rrq = second.rrq();
    let out = lab.send(a, &second, &rrq);
    assert!(out[0].payload.len() <= rrq.len());
    match Answer::read(&out[0].payload).unwrap() {
        Answer::Rrj {
            reason, alternates, ..
        } => {
            assert_eq!(reason, "resourceUnavailable");
            assert!(alternates.is_empty(), "{alternates:?}");
        }
        other => panic!("RRJ expected, got {other:?}"),
    }
    let stats = lab.gatekeeper.stats();
    assert_eq!(
        (stats.reflection_shortened, stats.reflection_dropped),
        (2, 0)
    );
    // Four octets with a readable seq: even an XRS without its echo is longer. Not sent.
    assert!(lab.send(b, &second, &rrq[..4]).is_empty());
    let stats = lab.gatekeeper.stats();
    assert_eq!(stats.reflection_dropped, 1);
    let truncated = stats.malformed_of(rasgk::gatekeeper::stats::BadDatagram::Truncated);
    assert_eq!((truncated.answered, truncated.dropped), (0, 1));
}

#[test]
fn a_cached_rcf_is_held_back_once_its_phone_is_no_longer_registered() {
    // Found by the handle fuzzer: a C-LAN fault unregistered a phone, and the old RRQ sent
    // again within 10 s got the cached RCF with its AGL — to an unregistered source.
    let mut lab = Lab::new(&limited("reflection_ratio = 1"));
    let mut p = phone(1, 1);
    let clan = match lab.grq(&mut p) {
        Answer::Gcf {
            ras_address: Some(clan),
            ..
        } => clan,
        other => panic!("GCF expected, got {other:?}"),
    };
    let rrq = p.rrq();
    let rcf = lab.send(clan, &p, &rrq);
    assert!(
        rcf[0].payload.len() > rrq.len(),
        "the RCF is over the bound"
    );
    // Registered, a retransmission gets the same RCF.
    assert_eq!(lab.send(clan, &p, &rrq), rcf);
    let name = lab.name_of(clan);
    let idx = lab.gatekeeper.clan_by_name(&name).unwrap();
    let urqs = lab.gatekeeper.set_in_service(lab.now, idx, false);
    assert_eq!(urqs.len(), 1, "the phone is unregistered with a URQ");
    assert!(lab.send(clan, &p, &rrq).is_empty());
    assert_eq!(lab.gatekeeper.stats().reflection_dropped, 1);
}

#[test]
fn a_phone_registering_again_as_it_was_keeps_its_socket_and_its_names() {
    use rasgk::gatekeeper::events::{Ending, Event};
    let mut lab = Lab::new(ONE_REGION);
    let mut p = phone(1, 1);
    let clan = lab.register(&mut p);
    let mut q = phone(1, 2);
    lab.register(&mut q);
    let id = p.endpoint_id.clone();
    let loads = lab.loads();
    drop(lab.gatekeeper.drain_events());

    // At 100 s, the same full RRQ again (new seq, new call signalling port): same id, same
    // socket, no load moved, and the events of a re-registration.
    lab.at(100);
    p.call_signal_address.set_port(1721);
    assert!(matches!(lab.rrq_at(clan, &mut p), Answer::Rcf { .. }));
    assert_eq!(p.endpoint_id, id);
    assert_eq!(lab.loads(), loads);
    assert_eq!(lab.gatekeeper.registrations().len(), 2);
    let events = lab.gatekeeper.drain_events();
    assert!(
        matches!(
            &events[..],
            [
                Event::Unregistered {
                    reason: Ending::Reregistered,
                    ..
                },
                Event::Registered { tts: false, .. }
            ]
        ),
        "{events:?}"
    );
    // Its alias still names it: another address cannot take it; its keep-alive is known.
    let mut thief = phone(1, 3);
    thief.aliases = p.aliases.clone();
    assert_eq!(
        reason(lab.rrq_at(clan, &mut thief)),
        "duplicateAlias",
        "the alias index still holds the phone"
    );
    let keep_alive = p.keep_alive().unwrap();
    assert!(matches!(
        lab.ask(clan, &mut p, &keep_alive),
        Answer::Rcf { .. }
    ));

    // Its TTL counts from the re-registration (300 s from 100 s), not from the first.
    lab.at(350);
    let left: Vec<String> = lab
        .gatekeeper
        .registrations()
        .into_iter()
        .map(|r| r.endpoint_id)
        .collect();
    assert_eq!(
        left,
        vec![id.as_ref().unwrap().text()],
        "q expired at 300 s"
    );
    lab.at(401);
    assert!(
        lab.gatekeeper.registrations().is_empty(),
        "p expired at 400 s"
    );
    assert_eq!(lab.loads(), vec![(0, 0); 3]);

    // Registering again with other aliases frees the old one for another phone.
    let mut r = phone(1, 4);
    let r_clan = lab.register(&mut r);
    let old = r.aliases.clone();
    r.aliases = phone(1, 5).aliases;
    assert!(matches!(lab.rrq_at(r_clan, &mut r), Answer::Rcf { .. }));
    let mut heir = phone(1, 6);
    heir.aliases = old;
    assert!(matches!(lab.rrq_at(r_clan, &mut heir), Answer::Rcf { .. }));
    assert_eq!(lab.gatekeeper.registrations().len(), 2);
    let mut thief = phone(1, 7);
    thief.aliases = r.aliases.clone();
    assert_eq!(reason(lab.rrq_at(r_clan, &mut thief)), "duplicateAlias");
}

/// One C-LAN of cap 40 that warns at `warn` sockets.
fn warning_at(warn: u32) -> String {
    format!(
        r#"
[gatekeeper]
seed = 1
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[clan]]
name = "w"
region = 1
address = "127.0.1.1:1719"
max_sockets = 40
warn_sockets = {warn}
"#
    )
}

/// The `warn_sockets` crossings among the events since the last call, as (warning, load).
fn warnings(lab: &mut Lab) -> Vec<(bool, u32)> {
    use rasgk::gatekeeper::events::Event;
    lab.gatekeeper
        .drain_events()
        .into_iter()
        .filter_map(|event| match event {
            Event::ClanWarning {
                clan,
                warning,
                load,
                warn_sockets,
            } => {
                assert_eq!((clan.as_str(), warn_sockets), ("w", 20));
                Some((warning, load))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn warn_sockets_raises_and_clears_once_per_crossing() {
    // warn_sockets 20: raised when the load reaches 20, cleared below 19 (hysteresis 1).
    let mut lab = Lab::new(&warning_at(20));
    let mut phones: Vec<Phone> = (1..=25).map(|n| phone(1, n)).collect();
    let mut seen = Vec::new();
    let unregister = |lab: &mut Lab, p: &mut Phone| {
        let urq = p.urq();
        assert!(matches!(
            lab.ask(addr("127.0.1.1:1719"), p, &urq),
            Answer::Ucf { .. }
        ));
    };

    // Fill to 25, one phone at a time: raised once, by the 20th GCF's reservation.
    for (i, p) in phones.iter_mut().enumerate() {
        lab.register(p);
        let crossed = warnings(&mut lab);
        if i + 1 == 20 {
            assert_eq!(crossed, [(true, 20)], "the 20th phone");
        } else {
            assert_eq!(crossed, [], "phone {}", i + 1);
        }
        seen.extend(crossed);
    }
    assert!(lab.clan("w").warning);
    assert_eq!(lab.clan("w").warn_sockets, Some(20));

    // Down to 19, then up to 20 and down to 19 twice: inside the hysteresis, nothing.
    for p in &mut phones[19..25] {
        unregister(&mut lab, p);
    }
    assert_eq!(lab.clan("w").sockets, 19);
    assert_eq!(warnings(&mut lab), []);
    for _ in 0..2 {
        lab.register(&mut phones[19]);
        assert_eq!(lab.clan("w").sockets, 20);
        assert_eq!(warnings(&mut lab), []);
        unregister(&mut lab, &mut phones[19]);
        assert_eq!(warnings(&mut lab), []);
    }
    assert!(lab.clan("w").warning, "still standing at 19");

    // Drain to empty: cleared once, at 18.
    for (i, p) in phones[..19].iter_mut().enumerate().rev() {
        unregister(&mut lab, p);
        let crossed = warnings(&mut lab);
        if i == 18 {
            assert_eq!(crossed, [(false, 18)]);
        } else {
            assert_eq!(crossed, [], "down to {i}");
        }
        seen.extend(crossed);
    }
    assert!(!lab.clan("w").warning);
    assert_eq!(lab.clan("w").sockets, 0);

    // Fill again: raised again, once.
    for p in &mut phones[..20] {
        lab.register(p);
        seen.extend(warnings(&mut lab));
    }
    assert_eq!(seen, [(true, 20), (false, 18), (true, 20)]);
}

#[test]
fn a_reload_keeps_a_standing_warning_and_judges_a_new_threshold_once() {
    let mut lab = Lab::new(&warning_at(20));
    let mut phones: Vec<Phone> = (1..=20).map(|n| phone(1, n)).collect();
    for p in &mut phones {
        lab.register(p);
    }
    assert_eq!(warnings(&mut lab), [(true, 20)]);
    let now = lab.now;
    let reload = |lab: &mut Lab, toml: &str| {
        let config = config::from_toml(toml, "scenario.toml").unwrap();
        lab.gatekeeper.reload(now, config).unwrap();
    };
    // The same file again: the warning stands, no new event.
    reload(&mut lab, &warning_at(20));
    assert_eq!(warnings(&mut lab), []);
    assert!(lab.clan("w").warning);
    // A threshold above the load: cleared, once.
    reload(&mut lab, &warning_at(30));
    let cleared: Vec<bool> = lab
        .gatekeeper
        .drain_events()
        .into_iter()
        .filter_map(|e| match e {
            rasgk::gatekeeper::events::Event::ClanWarning { warning, load, .. } => {
                assert_eq!(load, 20);
                Some(warning)
            }
            _ => None,
        })
        .collect();
    assert_eq!(cleared, [false]);
    assert!(!lab.clan("w").warning);
}
