//! Socket mode in the core, in virtual time (docs/rules.md §8): connection events go in
//! as values, commands come out, no socket is opened. Attribution, the cap against racing
//! connections, at most `max_setups_per_clan` establishments per C-LAN, TTS set-ups and
//! their failures, the life of a socket, and time to service.

mod support;

use std::net::SocketAddr;

use rasgk::gatekeeper::{ClanView, Closing, Command, ConnectionId, Refusal};
use rasgk::phone::{Answer, Phone};
use rasgk::tpkt;
use support::core::CoreLab;

const DISCOVERY: &str = "127.0.0.1:1719";

/// Two C-LANs of region 1 (caps 4 and 3), one of region 2; every knob of socket mode set.
fn topology(setup_ms: u32, extra: &str) -> String {
    format!(
        r#"
        [gatekeeper]
        sockets = "tcp"
        seed = 1
        setup_ms = {setup_ms}
        setup_timeout_ms = 500
        {extra}

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
        name = "a"
        region = 1
        address = "127.0.1.1:1719"
        max_sockets = 4
        [[clan]]
        name = "b"
        region = 1
        address = "127.0.1.2:1719"
        max_sockets = 3
        [[clan]]
        name = "c"
        region = 2
        address = "127.0.2.1:1719"
        signal_port = 2720
        priority = 2

        [[tts]]
        aliases = ["5*"]
    "#
    )
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

type Lab = CoreLab;

impl CoreLab {
    fn new(toml: &str) -> Lab {
        CoreLab::with_config(toml, "socket-mode.toml")
    }

    /// GRQ, RRQ where the GCF says; the RCF's callSignalAddress.
    fn register(&mut self, phone: &mut Phone) -> SocketAddr {
        self.register_at(addr(DISCOVERY), phone)
    }

    fn clan(&self, name: &str) -> ClanView {
        self.gatekeeper
            .clans()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap()
    }

    /// (places, established, setups, queued) of a C-LAN.
    fn sockets(&self, name: &str) -> (u32, u32, u32, u32) {
        let c = self.clan(name);
        (c.sockets, c.established, c.setups, c.queued)
    }

    fn accept(&mut self, local: SocketAddr, phone: &Phone) -> Result<ConnectionId, Refusal> {
        let from = SocketAddr::new(phone.ras_address.ip(), 40_000);
        self.gatekeeper.accept(self.now, local, from)
    }

    fn commands(&mut self) -> Vec<Command> {
        self.gatekeeper.take_commands()
    }
}

/// A standard endpoint: it does not ask for the service frame.
fn phone(region: u8, n: u8, extension: u32) -> Phone {
    Phone::extension(extension, addr(&format!("127.{region}.0.{n}:1719")))
}

/// One of rasgk's own phones: its RRQ asks for the service frame (docs/rules.md §8.4).
fn asking(region: u8, n: u8, extension: u32) -> Phone {
    let mut phone = phone(region, n, extension);
    phone.service_frame = true;
    phone
}

fn sends_empty_frame(commands: &[Command], id: ConnectionId) -> bool {
    commands.iter().any(|c| {
        matches!(c, Command::Send { id: to, payload } if *to == id && payload[..] == tpkt::EMPTY)
    })
}

#[test]
fn a_non_tts_phone_connects_where_its_rcf_says_and_its_place_becomes_a_socket() {
    let mut lab = Lab::new(&topology(0, ""));
    let mut p = asking(1, 1, 6001);
    let signal = lab.register(&mut p);
    assert_eq!(
        signal,
        addr("127.0.1.1:1720"),
        "the C-LAN's signalling address"
    );
    assert_eq!(lab.sockets("a"), (1, 0, 0, 0), "a place, no socket yet");
    let registration = &lab.gatekeeper.registrations()[0];
    assert_eq!(registration.socket.name(), "waiting");

    // A stranger's connection is refused and holds nothing.
    let stranger = phone(1, 99, 9999);
    assert_eq!(lab.accept(signal, &stranger), Err(Refusal::Stranger));
    // The phone's connection on the wrong C-LAN belongs to nobody there.
    assert_eq!(
        lab.accept(addr("127.0.1.2:1720"), &p),
        Err(Refusal::Stranger)
    );

    let id = lab.accept(signal, &p).expect("the phone's connection");
    assert!(sends_empty_frame(&lab.commands(), id), "in service at once");
    assert_eq!(lab.sockets("a"), (1, 1, 0, 0));
    assert_eq!(
        lab.gatekeeper.registrations()[0].socket.name(),
        "established"
    );
    // A second connection of the same phone: nobody waits for it.
    assert_eq!(lab.accept(signal, &p), Err(Refusal::Stranger));
    let stats = lab.gatekeeper.socket_stats();
    assert_eq!(stats.refused[&Refusal::Stranger], 3);
    assert_eq!(stats.time_to_service_other.count, 1);
}

#[test]
fn count_mode_refuses_connections_and_names_the_clan_in_its_rcf_too() {
    let toml = topology(0, "").replace("sockets = \"tcp\"", "sockets = \"count\"");
    let mut lab = Lab::new(&toml);
    let mut p = phone(1, 1, 6001);
    assert_eq!(lab.register(&mut p), addr("127.0.1.1:1720"));
    assert_eq!(lab.sockets("a"), (1, 0, 0, 0));
    assert_eq!(lab.gatekeeper.registrations()[0].socket.name(), "counted");
    assert_eq!(
        lab.accept(addr("127.0.1.1:1720"), &p),
        Err(Refusal::CountMode)
    );
    assert!(lab.commands().is_empty());
}

#[test]
fn the_sixth_establishment_on_a_clan_is_refused_busy_until_one_completes() {
    let toml = topology(20, "")
        .replace("max_sockets = 4", "max_sockets = 40")
        .replace(
            "max_sockets = 3",
            "max_sockets = 3\n        in_service = false",
        );
    let mut lab = Lab::new(&toml);
    let mut phones: Vec<Phone> = (1..=7).map(|n| asking(1, n, 6000 + u32::from(n))).collect();
    for p in &mut phones {
        assert_eq!(lab.register(p), addr("127.0.1.1:1720"));
    }
    let signal = addr("127.0.1.1:1720");
    let ids: Vec<_> = phones[..5]
        .iter()
        .map(|p| lab.accept(signal, p).expect("room for five"))
        .collect();
    assert_eq!(lab.accept(signal, &phones[5]), Err(Refusal::Busy));
    assert_eq!(lab.sockets("a"), (7, 0, 5, 0));
    lab.at_ms(19);
    assert_eq!(lab.sockets("a").1, 0, "setup_ms not over");
    lab.at_ms(20);
    assert_eq!(lab.sockets("a"), (7, 5, 0, 0));
    let commands = lab.commands();
    assert!(ids.iter().all(|&id| sends_empty_frame(&commands, id)));
    // The refused phone retries and gets its socket.
    lab.accept(signal, &phones[5])
        .expect("a slot is free again");
    lab.accept(signal, &phones[6]).expect("and another");
    lab.at_ms(40);
    assert_eq!(lab.sockets("a"), (7, 7, 0, 0));
    let stats = lab.gatekeeper.socket_stats();
    assert_eq!(stats.refused[&Refusal::Busy], 1);
    assert_eq!(stats.time_to_service_other.count, 7);
}

#[test]
fn phones_behind_one_ip_are_matched_in_registration_order() {
    let toml = topology(0, "").replace(
        "max_sockets = 3",
        "max_sockets = 3\n        in_service = false",
    );
    let mut lab = Lab::new(&toml);
    // Three phones behind one NAT address, told apart by their RAS ports.
    let mut phones: Vec<Phone> = (0..3)
        .map(|i| Phone::extension(6001 + i, addr(&format!("127.1.0.7:{}", 2000 + i))))
        .collect();
    for p in &mut phones {
        lab.register(p);
    }
    let signal = addr("127.0.1.1:1720");
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(lab.accept(signal, &phones[0]).expect("one of them waits"));
    }
    assert_eq!(lab.accept(signal, &phones[0]), Err(Refusal::Stranger));
    let states: Vec<&str> = lab
        .gatekeeper
        .registrations()
        .iter()
        .map(|r| r.socket.name())
        .collect();
    assert_eq!(states, ["established"; 3]);
    // The first connection is the oldest registration's: closing it frees that one.
    lab.gatekeeper.closed(lab.now, ids[0], Closing::Fin);
    let first = &lab.gatekeeper.registrations()[0];
    assert_eq!((first.socket.name(), first.clan.as_deref()), ("none", None));
}

#[test]
fn a_closed_socket_frees_its_place_at_once_and_the_phone_reconnects_only_with_room() {
    let mut lab = Lab::new(&topology(0, ""));
    let signal = addr("127.0.1.1:1720");
    let mut first = phone(1, 1, 6001);
    lab.register(&mut first);
    let id = lab.accept(signal, &first).unwrap();
    lab.gatekeeper.closed(lab.now, id, Closing::Reset);
    assert_eq!(lab.sockets("a"), (0, 0, 0, 0));
    assert_eq!(lab.gatekeeper.registrations().len(), 1, "still registered");
    // Others fill clan a (cap 4) and b (cap 3) in the meantime.
    let mut others: Vec<Phone> = (2..=8).map(|n| phone(1, n, 6000 + u32::from(n))).collect();
    for p in &mut others {
        lab.register(p);
    }
    assert_eq!(lab.clan("a").sockets, 4);
    assert_eq!(lab.accept(signal, &first), Err(Refusal::NoRoom));
    assert!(lab.clan("a").sockets <= lab.clan("a").max_sockets);
    // One of clan a's phones leaves: room again.
    let on_a = lab
        .gatekeeper
        .registrations()
        .into_iter()
        .find(|r| r.clan.as_deref() == Some("a"))
        .expect("a phone on a");
    let leaving = others
        .iter_mut()
        .find(|p| p.ras_address == on_a.ras_address)
        .expect("one of the others");
    let urq = leaving.urq();
    let answer = lab.ask(addr("127.0.1.1:1719"), leaving, &urq);
    assert!(matches!(answer, Answer::Ucf { .. }), "{answer:?}");
    lab.accept(signal, &first).expect("room again");
    let stats = lab.gatekeeper.socket_stats();
    assert_eq!(stats.closed[&Closing::Reset], 1);
    assert_eq!(stats.refused[&Refusal::NoRoom], 1);
}

#[test]
fn tts_set_ups_run_five_at_a_time_per_clan_and_the_rest_wait_in_order() {
    let toml = topology(0, "")
        .replace("max_sockets = 4", "max_sockets = 40")
        .replace("max_sockets = 3", "max_sockets = 40");
    let mut lab = Lab::new(&toml);
    let mut phones: Vec<Phone> = (1..=14).map(|n| phone(1, n, 5000 + u32::from(n))).collect();
    for p in &mut phones {
        lab.register(p);
    }
    let connects: Vec<(ConnectionId, std::net::IpAddr, SocketAddr)> = lab
        .commands()
        .into_iter()
        .filter_map(|c| match c {
            Command::Connect { id, from, to } => Some((id, from, to)),
            _ => None,
        })
        .collect();
    // Balanced over a and b (docs/rules.md §7.1: least loaded), five in flight on each, the rest
    // queued.
    assert_eq!(connects.len(), 10);
    assert_eq!(lab.sockets("a"), (7, 0, 5, 2));
    assert_eq!(lab.sockets("b"), (7, 0, 5, 2));
    assert!(connects
        .iter()
        .all(|(_, from, to)| from.to_string().starts_with("127.0.1.")
            && to.ip().to_string().starts_with("127.1.0.")
            && to.port() == 1720));
    // Connected ones establish; the queued ones start as slots free.
    for &(id, ..) in &connects {
        lab.gatekeeper.connected(lab.now, id);
    }
    let next: Vec<Command> = lab.commands();
    assert_eq!(
        next.iter()
            .filter(|c| matches!(c, Command::Connect { .. }))
            .count(),
        4
    );
    assert_eq!(lab.sockets("a"), (7, 5, 2, 0));
    let stats = lab.gatekeeper.socket_stats();
    assert_eq!(stats.time_to_service_tts.count, 10);
    assert_eq!(stats.connects, 14);
}

#[test]
fn a_refused_or_timed_out_tts_connect_moves_to_the_next_candidate_then_backs_off() {
    let mut lab = Lab::new(&topology(0, ""));
    let mut p = phone(1, 1, 5001);
    lab.register(&mut p);
    let first = match lab.commands().as_slice() {
        [Command::Connect { id, from, .. }] => (*id, *from),
        other => panic!("one connect expected, got {other:?}"),
    };
    lab.gatekeeper.connect_failed(lab.now, first.0);
    let second = match lab.commands().as_slice() {
        [Command::Connect { id, from, .. }] => (*id, *from),
        other => panic!("the next candidate expected, got {other:?}"),
    };
    assert_ne!(first.1, second.1, "another C-LAN");
    // The second one times out (setup_timeout_ms 500): closed, and the third candidate.
    lab.at_ms(500);
    let commands = lab.commands();
    assert!(commands.contains(&Command::Close {
        id: second.0,
        reset: true
    }));
    let third = commands
        .iter()
        .find_map(|c| match c {
            Command::Connect { id, from, .. } => Some((*id, *from)),
            _ => None,
        })
        .expect("region 2's C-LAN is in its AGL too");
    assert_eq!(third.1.to_string(), "127.0.2.1");
    lab.gatekeeper.connect_failed(lab.now, third.0);
    // Every candidate failed: no place held anywhere, a later round.
    assert!(lab.commands().is_empty());
    assert_eq!(
        lab.gatekeeper
            .clans()
            .iter()
            .map(|c| c.sockets)
            .sum::<u32>(),
        0
    );
    lab.at_ms(1_499);
    assert!(lab.commands().is_empty());
    lab.at_ms(1_500);
    assert!(matches!(
        lab.commands().as_slice(),
        [Command::Connect { .. }]
    ));
    let stats = lab.gatekeeper.socket_stats();
    assert_eq!(stats.closed[&Closing::ConnectFailed], 2);
    assert_eq!(stats.closed[&Closing::ConnectTimedOut], 1);
}

#[test]
fn unregistration_and_a_clan_out_of_service_close_the_sockets() {
    let mut lab = Lab::new(&topology(0, ""));
    let signal = addr("127.0.1.1:1720");
    let mut phones: Vec<Phone> = (1..=3).map(|n| phone(1, n, 6000 + u32::from(n))).collect();
    let mut ids = Vec::new();
    for p in &mut phones {
        if lab.register(p) == signal {
            ids.push(lab.accept(signal, p).unwrap());
        }
    }
    lab.commands();
    let a = lab.gatekeeper.clan_by_name("a").unwrap();
    let urqs = lab.gatekeeper.set_in_service(lab.now, a, false);
    assert_eq!(urqs.len(), ids.len(), "each of its phones gets a URQ");
    let commands = lab.commands();
    for id in &ids {
        assert!(commands.contains(&Command::Close {
            id: *id,
            reset: false
        }));
    }
    assert_eq!(lab.sockets("a"), (0, 0, 0, 0));
    // Their connections are gone: a late close from the phone changes nothing.
    lab.gatekeeper.closed(lab.now, ids[0], Closing::Fin);
    assert_eq!(
        lab.gatekeeper.socket_stats().closed[&Closing::ClanOutOfService],
        ids.len() as u64
    );
}

#[test]
fn a_bad_frame_closes_the_socket_and_the_phone_stays_registered() {
    let mut lab = Lab::new(&topology(0, "[limits]\nmax_frame_octets = 64"));
    let mut p = phone(1, 1, 6001);
    let signal = lab.register(&mut p);
    let id = lab.accept(signal, &p).unwrap();
    lab.commands();
    let mut reader = tpkt::Reader::new(64);
    let good = reader.read(&tpkt::EMPTY);
    lab.gatekeeper.received(lab.now, id, good);
    let bad = reader.read(&[3, 0, 1, 0]);
    assert!(bad.is_err());
    lab.gatekeeper.received(lab.now, id, bad);
    assert_eq!(lab.commands(), [Command::Close { id, reset: true }]);
    assert_eq!(lab.sockets("a"), (0, 0, 0, 0));
    assert_eq!(lab.gatekeeper.registrations().len(), 1);
    let stats = lab.gatekeeper.socket_stats();
    // The bad piece is not counted as read.
    assert_eq!((stats.octets, stats.frames), (4, 1));
    assert_eq!(stats.closed[&Closing::Frame], 1);
    // It may connect again.
    lab.accept(signal, &p).expect("reconnects");
}

/// Every connection command the lab's core gives for the first minute, each connect completed
/// at once and its socket closed by the phone `hold_ms` after it is up: when each connect came,
/// and whether anything was written on any of them.
fn closes_every_socket(lab: &mut Lab, hold_ms: u64) -> (Vec<u64>, bool) {
    let mut connects_at = Vec::new();
    let mut written = false;
    let mut open: Vec<(u64, ConnectionId)> = Vec::new();
    for ms in (0..60_000).step_by(10) {
        lab.at_ms(ms);
        if let Some(&(at, id)) = open.first().filter(|(at, _)| *at <= ms) {
            lab.gatekeeper.closed(lab.now, id, Closing::Fin);
            open.retain(|&(when, _)| when != at);
        }
        for command in lab.commands() {
            match command {
                Command::Connect { id, .. } => {
                    connects_at.push(ms);
                    lab.gatekeeper.connected(lab.now, id);
                    open.push((ms + hold_ms, id));
                }
                Command::Send { .. } => written = true,
                Command::Close { .. } => {}
            }
        }
        written |= lab
            .commands()
            .iter()
            .any(|c| matches!(c, Command::Send { .. }));
    }
    (connects_at, written)
}

/// docs/rules.md §8.6: a TTS phone that closes each socket at once, as a standard H.323
/// endpoint does with a connection that brings no Setup, is set up again only after the
/// back-off rounds (1, 2, 4 … 32 s): at most 8 connections in its first minute, each counted
/// as a decline and the phone shown as declining. Nothing is written on any of them: it did
/// not ask for the service frame. Before this rule the gatekeeper reconnected at once, 657
/// times in 10 s to one H323Plus endpoint.
#[test]
fn a_tts_phone_that_declines_every_socket_is_set_up_again_only_after_back_off_rounds() {
    let mut lab = Lab::new(&topology(0, ""));
    let mut p = phone(1, 1, 5001);
    lab.register(&mut p);
    let (connects_at, written) = closes_every_socket(&mut lab, 10);
    assert!(!written, "nothing is written to a standard endpoint");
    assert_eq!(
        connects_at,
        [0, 1_010, 3_020, 7_030, 15_040, 31_050],
        "rounds 1, 2, 4, 8, 16 s after each decline"
    );
    assert!(connects_at.len() <= 8);
    let registration = &lab.gatekeeper.registrations()[0];
    assert_eq!(registration.socket.name(), "declined");
    assert_eq!(registration.socket_declines, 6);
    assert_eq!(lab.gatekeeper.socket_stats().declines, 6);
    assert_eq!(lab.gatekeeper.declining_phones(), 1);
    assert_eq!(lab.sockets("a").0 + lab.sockets("b").0, 0, "no place held");
    // The next round comes 32 s after the last decline, and so does every later one.
    lab.at_ms(31_060 + 31_999);
    assert!(lab.commands().is_empty());
    lab.at_ms(31_060 + 32_000);
    assert!(matches!(
        lab.commands().as_slice(),
        [Command::Connect { .. }]
    ));
}

/// docs/rules.md §8.6: H323Plus holds a connection that brings nothing for 15 s ("Awaiting
/// first PDU"), then closes it on its read timeout. That too is a decline, however long the
/// socket was held: connects at 0, 16, 33 and 52 s in the first minute, none counted as a
/// socket lost and set up again at once.
#[test]
fn a_tts_socket_a_standard_endpoint_closes_after_its_idle_timeout_is_declined() {
    let mut lab = Lab::new(&topology(0, ""));
    let mut p = phone(1, 1, 5001);
    lab.register(&mut p);
    let (connects_at, written) = closes_every_socket(&mut lab, 15_000);
    assert!(!written);
    assert_eq!(connects_at, [0, 16_000, 33_000, 52_000]);
    let registration = &lab.gatekeeper.registrations()[0];
    assert_eq!(registration.socket_declines, 3, "the fourth is still held");
    assert_eq!(lab.gatekeeper.socket_stats().declines, 3);
}

/// A phone that asked for the service frame holds its socket for its registration (as
/// rasgk's own phones and Avaya's do): a socket it closes is lost, not declined, however soon
/// after the frame, and the next is set up at once (docs/rules.md §8.6).
#[test]
fn a_phone_that_asked_for_the_service_frame_never_declines() {
    let mut lab = Lab::new(&topology(0, ""));
    let mut p = asking(1, 1, 5001);
    lab.register(&mut p);
    for round in 0..3 {
        let id = match lab.commands().as_slice() {
            [Command::Connect { id, .. }] => *id,
            other => panic!("round {round}: one connect expected, got {other:?}"),
        };
        lab.gatekeeper.connected(lab.now, id);
        assert!(sends_empty_frame(&lab.commands(), id), "the service frame");
        lab.at_ms(10 * (round + 1));
        lab.gatekeeper.closed(lab.now, id, Closing::Fin);
    }
    assert!(matches!(
        lab.commands().as_slice(),
        [Command::Connect { .. }]
    ));
    let stats = lab.gatekeeper.socket_stats();
    assert_eq!((stats.declines, stats.service_frames), (0, 3));
    assert_eq!(lab.gatekeeper.registrations()[0].socket_declines, 0);
}

/// A TTS phone that asked for the service frame, holds its socket and then loses it is set up
/// again at once.
#[test]
fn a_tts_socket_held_and_lost_is_set_up_again_at_once() {
    let mut lab = Lab::new(&topology(0, ""));
    let mut p = asking(1, 1, 5001);
    lab.register(&mut p);
    let id = match lab.commands().as_slice() {
        [Command::Connect { id, .. }] => *id,
        other => panic!("one connect expected, got {other:?}"),
    };
    lab.gatekeeper.connected(lab.now, id);
    assert!(sends_empty_frame(&lab.commands(), id), "the service frame");
    lab.at_ms(1_000);
    lab.gatekeeper.closed(lab.now, id, Closing::Reset);
    assert!(
        matches!(lab.commands().as_slice(), [Command::Connect { .. }]),
        "set up again at once"
    );
    let registration = &lab.gatekeeper.registrations()[0];
    assert_eq!(registration.socket_declines, 0);
    assert_eq!(lab.gatekeeper.socket_stats().declines, 0);
}

/// docs/rules.md §8.4: the service frame goes only to a phone whose RRQ asked for it, and only
/// in socket mode; the RCF says so (H.460.1: the feature in `supportedFeatures`). A standard
/// endpoint's RCF confirms nothing, and nothing at all is written on its socket.
#[test]
fn only_a_phone_that_asks_gets_the_service_frame_and_its_rcf_confirms_it() {
    let rcf_of = |lab: &mut Lab, p: &mut Phone| {
        let grq = p.grq();
        let Answer::Gcf {
            ras_address: Some(clan),
            ..
        } = lab.ask(addr(DISCOVERY), p, &grq)
        else {
            panic!("no GCF")
        };
        let rrq = p.rrq();
        lab.ask(clan, p, &rrq)
    };
    for (sockets, ask, confirmed) in [
        ("tcp", true, true),
        ("tcp", false, false),
        ("count", true, false),
    ] {
        let toml =
            topology(0, "").replace("sockets = \"tcp\"", &format!("sockets = \"{sockets}\""));
        let mut lab = Lab::new(&toml);
        let mut p = phone(1, 1, 6001);
        p.service_frame = ask;
        match rcf_of(&mut lab, &mut p) {
            Answer::Rcf { service_frame, .. } => {
                assert_eq!(service_frame, confirmed, "{sockets} mode, asked {ask}")
            }
            other => panic!("expected RCF, got {other:?}"),
        }
        // The keep-alive's RCF says the same.
        let keep_alive = p.keep_alive().unwrap();
        match lab.ask(addr("127.0.1.1:1719"), &mut p, &keep_alive) {
            Answer::Rcf { service_frame, .. } => assert_eq!(service_frame, confirmed),
            other => panic!("expected RCF, got {other:?}"),
        }
        if sockets == "count" {
            continue;
        }
        lab.commands();
        let id = lab
            .accept(addr("127.0.1.1:1720"), &p)
            .expect("the phone's connection");
        let commands = lab.commands();
        assert_eq!(sends_empty_frame(&commands, id), ask, "{commands:?}");
        if !ask {
            assert!(commands.is_empty(), "nothing written: {commands:?}");
        }
        assert_eq!(
            lab.gatekeeper.registrations()[0].socket.name(),
            "established"
        );
        let stats = lab.gatekeeper.socket_stats();
        assert_eq!(stats.service_frames, u64::from(ask));
        assert_eq!(stats.time_to_service_other.count, 1, "measured either way");
    }
}

/// Two C-LANs on one IP with different RAS ports share a signalling address (IP:1720), which
/// count mode allows: every view still shows every C-LAN, each with its own load. The
/// per-C-LAN socket table was once keyed by that address and lost the last C-LAN of the file
/// from `/api/clans`.
#[test]
fn every_clan_is_shown_when_two_share_an_ip() {
    let mut toml =
        String::from("[gatekeeper]\nseed = 1\n[[region]]\nid = 1\nnetworks = [\"127.1.0.0/16\"]\n");
    for n in 1..=10 {
        let address = match n {
            9 => "127.0.1.9:1719".to_string(),
            10 => "127.0.1.9:1729".to_string(),
            n => format!("127.0.1.{n}:1719"),
        };
        toml.push_str(&format!(
            "[[clan]]\nname = \"c{n}\"\nregion = 1\naddress = \"{address}\"\n"
        ));
    }
    let mut lab = Lab::new(&toml);
    // One phone registers at each of the two sharing C-LANs (a full RRQ may arrive at any
    // C-LAN of its region).
    for (n, clan) in [(1u8, "127.0.1.9:1719"), (2, "127.0.1.9:1729")] {
        let mut p = phone(1, n, 6000 + u32::from(n));
        let rrq = p.rrq();
        match lab.ask(addr(clan), &mut p, &rrq) {
            Answer::Rcf { .. } => {}
            other => panic!("expected RCF at {clan}, got {other:?}"),
        }
    }
    let clans = lab.gatekeeper.clans();
    let names: Vec<&str> = clans.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"]
    );
    assert_eq!((clans[8].sockets, clans[9].sockets), (1, 1));
    assert_eq!(lab.gatekeeper.clan_sockets().count(), 10);
}
