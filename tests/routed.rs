//! Routed calls in the core, in virtual time (docs/rules.md §8.7): routed ACFs, the Q.931
//! relay between a call's legs with the call reference mapped per leg, the connection the
//! gatekeeper opens to a callee without a socket, every ending (Release Complete from either
//! side, a dropped leg, DRQ, unregistration, the C-LAN leaving service, no answer) and bad
//! input on the relay. Connection events go in as values, commands come out; no socket is
//! opened.

mod support;

use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use rasgk::gatekeeper::relay::BadSignal;
use rasgk::gatekeeper::{CallEnd, CallEntry, Closing, Command, ConnectionId};
use rasgk::phone::Phone;
use rasgk::q931::{self, CallReference, MessageType, Setup};
use rasgk::ras::{self, Alias};
use rasgk::tpkt;
use support::core::CoreLab;

const DISCOVERY: &str = "127.0.0.1:1719";

/// Region 1 with C-LANs a (cap 4) and b, region 2 with c; routed calls, TTS for 5*.
fn topology(extra: &str) -> String {
    format!(
        r#"
        [gatekeeper]
        sockets = "tcp"
        call_signalling = "routed"
        call_setup_timeout_s = 20
        seed = 1
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
        [[clan]]
        name = "c"
        region = 2
        address = "127.0.2.1:1719"

        [[tts]]
        aliases = ["5*"]
    "#
    )
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// A phone of the lab: its RAS side and, once it has one, its socket.
struct Station {
    phone: Phone,
    extension: u32,
    socket: Option<ConnectionId>,
    /// Where its RCF told it to connect.
    signal: SocketAddr,
}

type Lab = CoreLab;

impl CoreLab {
    fn new(toml: &str) -> Lab {
        CoreLab::with_config(toml, "routed.toml")
    }

    /// GRQ, RRQ where the GCF says.
    fn register(&mut self, extension: u32, ras_address: &str) -> Station {
        self.register_asking(extension, ras_address, false)
    }

    /// GRQ, RRQ where the GCF says; `service_frame`: the RRQ asks for it, so that the phone
    /// holds its socket for its registration (as rasgk's own phones and Avaya's do).
    fn register_asking(
        &mut self,
        extension: u32,
        ras_address: &str,
        service_frame: bool,
    ) -> Station {
        let mut phone = Phone::extension(extension, addr(ras_address));
        phone.service_frame = service_frame;
        let signal = self.register_at(addr(DISCOVERY), &mut phone);
        Station {
            phone,
            extension,
            socket: None,
            signal,
        }
    }

    /// A non-TTS phone connects its socket where its RCF said.
    fn connect(&mut self, station: &mut Station) -> ConnectionId {
        let from = SocketAddr::new(station.phone.ras_address.ip(), 40_000);
        let id = self
            .gatekeeper
            .accept(self.now, station.signal, from)
            .expect("the phone's socket");
        station.socket = Some(id);
        self.commands();
        id
    }

    /// Registers a phone and connects its socket.
    fn phone(&mut self, extension: u32, ras_address: &str) -> Station {
        let mut station = self.register(extension, ras_address);
        self.connect(&mut station);
        station
    }

    fn commands(&mut self) -> Vec<Command> {
        self.gatekeeper.take_commands()
    }

    /// Hands the gatekeeper one message as read on connection `id`.
    fn send(&mut self, id: ConnectionId, payload: &Bytes) {
        let framed = tpkt::frame(payload).unwrap();
        let mut reader = tpkt::Reader::new(16384);
        let read = reader.read(&framed);
        self.gatekeeper.frame(self.now, id, payload);
        self.gatekeeper.received(self.now, id, read);
    }

    /// An ARQ for a call from `station` to `extension`: the ACF's address and call model.
    fn arq(&mut self, station: &mut Station, extension: u32, call: [u8; 16]) -> (SocketAddr, bool) {
        let local = addr("127.0.1.1:1719");
        let arq = station.phone.arq(&extension.to_string(), call).unwrap();
        match self.ask_message(local, &mut station.phone, &arq) {
            ras::RasMessage::admissionConfirm(acf) => (
                ras::socket_addr(&acf.dest_call_signal_address).unwrap(),
                matches!(acf.call_model, ras::asn::CallModel::gatekeeperRouted(())),
            ),
            other => panic!("expected ACF, got {other:?}"),
        }
    }

    fn calls(&self) -> Vec<rasgk::gatekeeper::RoutedCallView> {
        self.gatekeeper
            .call_entries(self.now)
            .into_iter()
            .filter_map(|entry| match entry {
                CallEntry::Routed(call) => Some(call),
                CallEntry::Trunk(_) => None,
            })
            .collect()
    }
}

fn guid(n: u8) -> [u8; 16] {
    let mut g = [0x11; 16];
    g[6] = 0x40; // version 4
    g[15] = n;
    g
}

/// A Setup from `station` to `extension` with call reference `crv`.
fn setup(station: &Station, extension: u32, crv: u16, call: [u8; 16]) -> Bytes {
    let source = [Alias::dialled_digits(&station.extension.to_string()).unwrap()];
    let destination = [Alias::dialled_digits(&extension.to_string()).unwrap()];
    q931::setup(&Setup {
        call_reference: CallReference::from_originator(crv),
        call_identifier: call,
        conference_id: call,
        source: &source,
        destination: &destination,
        display: None,
        endpoint_identifier: station.phone.endpoint_id.as_ref(),
    })
    .unwrap()
}

/// The Q.931 messages written on connection `id`: (type, call reference, cause).
fn written(
    commands: &[Command],
    id: ConnectionId,
) -> Vec<(MessageType, CallReference, Option<u8>)> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Send { id: to, payload } if *to == id && payload.len() > 4 => {
                let message = q931::Message::parse(&payload[4..]).expect("Q.931");
                Some((
                    message.message_type,
                    message.call_reference,
                    message.cause(),
                ))
            }
            _ => None,
        })
        .collect()
}

fn closes(commands: &[Command], id: ConnectionId) -> bool {
    commands
        .iter()
        .any(|c| matches!(c, Command::Close { id: to, .. } if *to == id))
}

/// Two phones with sockets, a call set up and answered between them: the caller's leg and
/// crv, the callee's leg and crv.
fn answered_call(
    lab: &mut Lab,
    a: &mut Station,
    b: &mut Station,
    call: [u8; 16],
) -> (ConnectionId, u16, ConnectionId, u16) {
    let (ca, cb) = (a.socket.unwrap(), b.socket.unwrap());
    lab.arq(a, b.extension, call);
    lab.send(ca, &setup(a, b.extension, 77, call));
    let out = lab.commands();
    let to_b = written(&out, cb);
    assert_eq!(to_b.len(), 1, "{out:?}");
    let (kind, crv, _) = to_b[0];
    assert_eq!(kind, MessageType::Setup);
    assert!(
        !crv.from_destination,
        "the gatekeeper chose the callee leg's value"
    );
    lab.send(cb, &q931::alerting(crv.reversed(), call));
    lab.send(cb, &q931::connect(crv.reversed(), call, call));
    let out = lab.commands();
    assert_eq!(
        written(&out, ca),
        [
            (
                MessageType::Alerting,
                CallReference::to_originator(77),
                None
            ),
            (MessageType::Connect, CallReference::to_originator(77), None)
        ]
    );
    (ca, 77, cb, crv.value)
}

#[test]
fn an_acf_names_the_callers_clan_routed_and_the_callees_answer_is_confirmed_alike() {
    let mut lab = Lab::new(&topology(""));
    let mut a = lab.phone(6001, "127.1.0.1:1719");
    let mut b = lab.phone(6002, "127.2.0.1:1719");
    let (dest, routed) = lab.arq(&mut a, 6002, guid(1));
    assert_eq!(dest, a.signal, "the caller's C-LAN's signalling address");
    assert!(routed, "callModel gatekeeperRouted");
    let (dest, routed) = lab.arq(&mut b, 6002, guid(1));
    assert_eq!(dest, b.signal);
    assert!(routed);
    // Direct mode: the callee's own address, callModel direct, as before.
    let mut direct = Lab::new(&topology("").replace("call_signalling = \"routed\"", ""));
    let mut a = direct.phone(6001, "127.1.0.1:1719");
    direct.phone(6002, "127.2.0.1:1719");
    let (dest, routed) = direct.arq(&mut a, 6002, guid(1));
    assert_eq!(dest, addr("127.2.0.1:1720"));
    assert!(!routed);
}

#[test]
fn a_call_is_relayed_both_ways_with_the_call_reference_mapped_per_leg() {
    let mut lab = Lab::new(&topology(""));
    let mut a = lab.phone(6001, "127.1.0.1:1719");
    let mut b = lab.phone(6002, "127.2.0.1:1719");
    lab.at_ms(100);
    let (ca, crv_a, cb, crv_b) = answered_call(&mut lab, &mut a, &mut b, guid(1));
    let calls = lab.calls();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call.state.name(), "connected");
    assert_eq!(call.caller_alias.as_deref(), Some("6001"));
    assert_eq!(call.callee_alias.as_deref(), Some("6002"));
    assert_eq!(call.caller_leg.connection, Some(ca));
    assert_eq!(call.callee_leg.connection, Some(cb));
    assert_eq!(call.caller_leg.clan, "a");
    assert_eq!(call.callee_leg.clan, "c");
    assert_eq!(call.callee_leg.call_reference, Some(crv_b));
    let clans = lab.gatekeeper.clans();
    assert_eq!(clans.iter().map(|c| c.calls).collect::<Vec<_>>(), [1, 0, 1]);
    // Any later message of the caller goes to the callee under the callee leg's value.
    let facility = q931::with_call_reference(
        &q931::alerting(CallReference::from_originator(crv_a), guid(1)),
        CallReference::from_originator(crv_a),
    )
    .unwrap();
    lab.send(ca, &facility);
    let out = lab.commands();
    assert_eq!(
        written(&out, cb)[0].1,
        CallReference::from_originator(crv_b)
    );
    // The caller hangs up: its Release Complete reaches the callee; nothing goes back.
    lab.at_ms(3_100);
    let release = q931::release_complete(
        CallReference::from_originator(crv_a),
        Some(guid(1)),
        q931::Release::NormalClearing,
    );
    lab.send(ca, &release);
    let out = lab.commands();
    assert_eq!(
        written(&out, cb),
        [(
            MessageType::ReleaseComplete,
            CallReference::from_originator(crv_b),
            Some(16)
        )]
    );
    assert!(written(&out, ca).is_empty());
    assert!(!closes(&out, ca) && !closes(&out, cb), "sockets stay");
    assert!(lab.calls().is_empty());
    // The callee's own Release Complete crosses the end (H323Plus sends one after its
    // endSession): dropped quietly, not counted as bad.
    lab.send(
        cb,
        &q931::release_complete(
            CallReference::to_originator(crv_b),
            Some(guid(1)),
            q931::Release::NormalClearing,
        ),
    );
    assert!(lab.commands().is_empty());
    assert!(lab.gatekeeper.call_stats().bad.is_empty());
    assert_eq!(lab.gatekeeper.call_stats().late, 1);
    let stats = lab.gatekeeper.call_stats();
    assert_eq!((stats.setups, stats.connected), (1, 1));
    assert_eq!(stats.ended[&CallEnd::CallerReleased], 1);
    assert!(stats.failed.is_empty());
    assert_eq!(stats.setup_to_connect.count, 1);
}

#[test]
fn a_callee_without_a_socket_gets_a_connection_from_its_clan_carrying_the_setup_first() {
    let mut lab = Lab::new(&topology(""));
    let mut a = lab.phone(6001, "127.1.0.1:1719");
    // A standard endpoint: registered, never connected.
    let b = lab.register(6002, "127.2.0.1:1719");
    let ca = a.socket.unwrap();
    lab.arq(&mut a, 6002, guid(2));
    lab.send(ca, &setup(&a, 6002, 5, guid(2)));
    let out = lab.commands();
    let (id, from, to) = out
        .iter()
        .find_map(|c| match c {
            Command::Connect { id, from, to } => Some((*id, *from, *to)),
            _ => None,
        })
        .expect("a connection to the callee");
    assert_eq!(
        from,
        "127.0.2.1".parse::<IpAddr>().unwrap(),
        "from its C-LAN"
    );
    assert_eq!(to, b.phone.call_signal_address);
    assert_eq!(lab.calls()[0].callee_leg.connection, None);
    // Connected: the Setup goes first, and no service frame at all.
    lab.gatekeeper.connected(lab.now, id);
    let out = lab.commands();
    let sent: Vec<&Bytes> = out
        .iter()
        .filter_map(|c| match c {
            Command::Send { id: to, payload } if *to == id => Some(payload),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1);
    assert_ne!(&sent[0][..], &tpkt::EMPTY[..]);
    assert_eq!(written(&out, id)[0].0, MessageType::Setup);
    let c = lab.gatekeeper.clans();
    assert_eq!(
        (c[2].sockets, c[2].established),
        (1, 1),
        "its place is the connection"
    );
    // The callee answers and, after the caller's release, closes its side: the place
    // goes, the phone stays registered.
    let crv = written(&out, id)[0].1;
    lab.send(id, &q931::connect(crv.reversed(), guid(2), guid(2)));
    lab.send(
        ca,
        &q931::release_complete(
            CallReference::from_originator(5),
            Some(guid(2)),
            q931::Release::NormalClearing,
        ),
    );
    lab.gatekeeper.closed(lab.now, id, Closing::Fin);
    let c = lab.gatekeeper.clans();
    assert_eq!((c[2].sockets, c[2].established), (0, 0));
    assert_eq!(lab.gatekeeper.registrations().len(), 2);
}

#[test]
fn a_standard_endpoint_busy_with_its_own_call_gets_a_second_call_on_a_connection_of_its_own() {
    let mut lab = Lab::new(&topology(""));
    let a = lab.phone(6001, "127.1.0.1:1719");
    // B, a standard endpoint: the connection it opened to place its call to A is its
    // socket while it lasts.
    let mut b = lab.phone(6002, "127.1.0.2:1719");
    let mut c = lab.phone(6003, "127.1.0.3:1719");
    let (ca, cb, cc) = (a.socket.unwrap(), b.socket.unwrap(), c.socket.unwrap());
    lab.arq(&mut b, 6001, guid(1));
    lab.send(cb, &setup(&b, 6001, 9, guid(1)));
    let out = lab.commands();
    assert_eq!(written(&out, ca)[0].0, MessageType::Setup);
    // C calls B while B's call runs: nothing on B's connection (its Setup said
    // multipleCalls FALSE), no connection yet.
    lab.arq(&mut c, 6002, guid(2));
    lab.send(cc, &setup(&c, 6002, 4, guid(2)));
    let out = lab.commands();
    assert!(written(&out, cb).is_empty(), "{out:?}");
    assert!(
        !out.iter().any(|c| matches!(c, Command::Connect { .. })),
        "{out:?}"
    );
    assert_eq!(lab.calls().len(), 2);
    // B's call ends and B closes its connection: C's call gets one of its own from B's
    // C-LAN, its Setup first.
    lab.send(
        cb,
        &q931::release_complete(
            CallReference::from_originator(9),
            Some(guid(1)),
            q931::Release::NormalClearing,
        ),
    );
    lab.gatekeeper.closed(lab.now, cb, Closing::Fin);
    let out = lab.commands();
    let (id, to) = out
        .iter()
        .find_map(|c| match c {
            Command::Connect { id, to, .. } => Some((*id, *to)),
            _ => None,
        })
        .expect("a connection to B for C's call");
    assert_eq!(to, b.phone.call_signal_address);
    lab.gatekeeper.connected(lab.now, id);
    let out = lab.commands();
    assert_eq!(written(&out, id)[0].0, MessageType::Setup);
    let calls = lab.calls();
    assert_eq!(calls.len(), 1, "C's call goes on: {calls:?}");
}

#[test]
fn a_destination_nobody_registered_is_released_called_party_not_registered() {
    let mut lab = Lab::new(&topology(""));
    let a = lab.phone(6001, "127.1.0.1:1719");
    let ca = a.socket.unwrap();
    lab.send(ca, &setup(&a, 6999, 9, guid(3)));
    let out = lab.commands();
    assert_eq!(
        written(&out, ca),
        [(
            MessageType::ReleaseComplete,
            CallReference::to_originator(9),
            Some(20)
        )]
    );
    let stats = lab.gatekeeper.call_stats();
    assert_eq!(stats.failed[&CallEnd::CalledPartyNotRegistered], 1);
    assert_eq!(stats.setups, 0);
}

#[test]
fn a_callee_that_never_answers_is_released_no_answer_on_both_legs() {
    let mut lab = Lab::new(&topology(""));
    let mut a = lab.phone(6001, "127.1.0.1:1719");
    let mut b = lab.phone(6002, "127.2.0.1:1719");
    let (ca, cb) = (a.socket.unwrap(), b.socket.unwrap());
    lab.arq(&mut a, 6002, guid(4));
    lab.send(ca, &setup(&a, 6002, 4, guid(4)));
    let crv = written(&lab.commands(), cb)[0].1;
    lab.send(cb, &q931::alerting(crv.reversed(), guid(4)));
    lab.commands();
    lab.at_ms(19_999);
    assert!(lab.commands().is_empty());
    lab.at_ms(20_000);
    let out = lab.commands();
    assert_eq!(
        written(&out, ca),
        [(
            MessageType::ReleaseComplete,
            CallReference::to_originator(4),
            Some(19)
        )]
    );
    assert_eq!(
        written(&out, cb),
        [(MessageType::ReleaseComplete, crv, Some(19))]
    );
    let _ = &mut b;
    assert_eq!(lab.gatekeeper.call_stats().failed[&CallEnd::NoAnswer], 1);
}

#[test]
fn the_callee_hanging_up_a_dropped_leg_a_drq_a_urq_and_a_clan_fault_each_end_the_call() {
    // Callee's Release Complete.
    let mut lab = Lab::new(&topology(""));
    let mut a = lab.phone(6001, "127.1.0.1:1719");
    let mut b = lab.phone(6002, "127.2.0.1:1719");
    let (ca, crv_a, cb, crv_b) = answered_call(&mut lab, &mut a, &mut b, guid(5));
    lab.send(
        cb,
        &q931::release_complete(
            CallReference::to_originator(crv_b),
            Some(guid(5)),
            q931::Release::NormalClearing,
        ),
    );
    let out = lab.commands();
    assert_eq!(
        written(&out, ca),
        [(
            MessageType::ReleaseComplete,
            CallReference::to_originator(crv_a),
            Some(16)
        )]
    );

    // A dropped leg: the caller's socket resets; the callee gets Release Complete.
    let (ca, _, cb, crv_b) = answered_call(&mut lab, &mut a, &mut b, guid(6));
    lab.gatekeeper.closed(lab.now, ca, Closing::Reset);
    let out = lab.commands();
    assert_eq!(
        written(&out, cb),
        [(
            MessageType::ReleaseComplete,
            CallReference::from_originator(crv_b),
            Some(3)
        )]
    );
    lab.connect(&mut a);

    // A DRQ of the callee ends it on both legs.
    let (ca, crv_a, cb, crv_b) = answered_call(&mut lab, &mut a, &mut b, guid(7));
    let drq = b.phone.drq(guid(7)).unwrap();
    let dcf = lab.ask_message(addr("127.0.2.1:1719"), &mut b.phone, &drq);
    assert!(matches!(dcf, ras::RasMessage::disengageConfirm(_)));
    let out = lab.commands();
    assert_eq!(written(&out, ca)[0].1, CallReference::to_originator(crv_a));
    assert_eq!(
        written(&out, cb)[0].1,
        CallReference::from_originator(crv_b)
    );

    // The caller unregisters: Release Complete on both legs, then its socket closes.
    let (ca, _, cb, _) = answered_call(&mut lab, &mut a, &mut b, guid(8));
    let urq = a.phone.urq();
    lab.ask_message(addr("127.0.1.1:1719"), &mut a.phone, &urq);
    let out = lab.commands();
    assert_eq!(written(&out, ca)[0].0, MessageType::ReleaseComplete);
    assert_eq!(written(&out, cb)[0].0, MessageType::ReleaseComplete);
    let release_at = out
        .iter()
        .position(|c| matches!(c, Command::Send { id, .. } if *id == ca));
    let close_at = out
        .iter()
        .position(|c| matches!(c, Command::Close { id, .. } if *id == ca));
    assert!(
        release_at < close_at,
        "Release Complete before the close: {out:?}"
    );

    // The callee's C-LAN leaves service.
    let mut a = lab.phone(6003, "127.1.0.3:1719");
    let (ca, _, _, _) = answered_call(&mut lab, &mut a, &mut b, guid(9));
    let c = lab.gatekeeper.clan_by_name("c").unwrap();
    lab.gatekeeper.set_in_service(lab.now, c, false);
    let out = lab.commands();
    assert_eq!(written(&out, ca)[0].0, MessageType::ReleaseComplete);
    assert!(lab.calls().is_empty());

    let ended = &lab.gatekeeper.call_stats().ended;
    for reason in [
        CallEnd::CalleeReleased,
        CallEnd::DroppedLeg,
        CallEnd::Disengaged,
        CallEnd::Unregistered,
        CallEnd::ClanOutOfService,
    ] {
        assert_eq!(ended.get(&reason), Some(&1), "{reason:?} in {ended:?}");
    }
}

#[test]
fn two_phones_behind_one_ip_are_told_apart_by_what_the_setup_says() {
    let mut lab = Lab::new(&topology("").replace("max_sockets = 4", "max_sockets = 10"));
    // Both register from 127.1.0.1 (RAS ports 1719 and 1720), neither connects: standard
    // endpoints. The second one calls the first.
    let b = lab.gatekeeper.clan_by_name("b").unwrap();
    let _ = lab.gatekeeper.set_in_service(lab.now, b, false);
    let first = lab.register(6001, "127.1.0.1:1719");
    let mut second = lab.register(6002, "127.1.0.1:1720");
    assert_eq!(first.signal, second.signal, "one C-LAN for both");
    lab.arq(&mut second, 6001, guid(10));
    // Its connection: by source IP alone the first phone (registered first) would own it.
    let id = lab.connect(&mut second);
    lab.send(id, &setup(&second, 6001, 3, guid(10)));
    let out = lab.commands();
    // The call goes to the first phone over a connection the gatekeeper opens.
    assert!(
        out.iter().any(
            |c| matches!(c, Command::Connect { to, .. } if *to == first.phone.call_signal_address)
        ),
        "{out:?}"
    );
    let call = &lab.calls()[0];
    assert_eq!(call.caller_alias.as_deref(), Some("6002"));
    assert_eq!(call.callee_alias.as_deref(), Some("6001"));
    let registrations = lab.gatekeeper.registrations();
    let socket = |alias: &str| {
        registrations
            .iter()
            .find(|r| r.aliases == [alias])
            .unwrap()
            .socket
            .name()
    };
    assert_eq!(
        socket("6002"),
        "established",
        "the connection is the caller's"
    );
    assert_eq!(
        socket("6001"),
        "connecting",
        "the callee's connection is being opened"
    );
}

#[test]
fn bad_input_on_the_relay_is_answered_or_closed_and_counted() {
    let mut lab = Lab::new(&topology("").replace("max_sockets = 4", "max_sockets = 40"));
    let mut a = lab.phone(6001, "127.1.0.1:1719");
    // B holds its socket for its registration: its calls share it.
    let mut b = lab.register_asking(6002, "127.1.0.2:1719", true);
    lab.connect(&mut b);
    let (ca, cb) = (a.socket.unwrap(), b.socket.unwrap());

    // Not Q.931 at all: counted, dropped.
    lab.send(ca, &Bytes::from_static(b"hello"));
    assert!(lab.commands().is_empty());
    // A message for a call reference no call has: Release Complete, cause 81.
    lab.send(
        ca,
        &q931::alerting(CallReference::from_originator(321), guid(1)),
    );
    assert_eq!(
        written(&lab.commands(), ca),
        [(
            MessageType::ReleaseComplete,
            CallReference::to_originator(321),
            Some(81)
        )]
    );
    // A Release Complete for nothing is not answered.
    lab.send(
        ca,
        &q931::release_complete(
            CallReference::from_originator(322),
            None,
            q931::Release::NormalClearing,
        ),
    );
    assert!(lab.commands().is_empty());
    // A Setup whose UUIE does not decode: Release Complete, cause 95.
    let mut broken = setup(&a, 6002, 11, guid(11)).to_vec();
    let uuie = broken
        .windows(4)
        .position(|w| w[0] == q931::ie::USER_USER && w[3] == q931::USER_USER_ASN1)
        .expect("a User-user element")
        + 4;
    broken[uuie..].fill(0xFF);
    lab.send(ca, &Bytes::from(broken));
    let out = written(&lab.commands(), ca);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, MessageType::ReleaseComplete);
    // A Setup naming another phone from this phone's IP: a stranger's.
    let stranger = lab.register(6005, "127.1.0.5:1719");
    lab.send(ca, &setup(&stranger, 6002, 12, guid(12)));
    let out = written(&lab.commands(), ca);
    assert_eq!(out[0].2, Some(31), "callerNotRegistered's cause");
    // A connection from an IP with no registered phone is refused at once.
    assert!(lab
        .gatekeeper
        .accept(lab.now, a.signal, addr("127.1.9.9:4000"))
        .is_err());

    // 1,000 Setups in a second from one phone: 16 calls, the rest released at once.
    let mut relayed = 0;
    for n in 0..1000u16 {
        lab.send(ca, &setup(&a, 6002, 1000 + n, guid(100)));
        relayed += written(&lab.commands(), cb).len();
    }
    assert_eq!(relayed, 16);
    let stats = lab.gatekeeper.call_stats();
    assert_eq!(stats.failed[&CallEnd::TooManyCalls], 984);
    // A repeated Setup for a call that is up is counted and dropped.
    lab.send(ca, &setup(&a, 6002, 1000, guid(100)));
    assert!(lab.commands().is_empty());
    // RAS goes on: another phone registers and calls.
    let mut c = lab.phone(6003, "127.1.0.3:1719");
    let mut d = lab.phone(6004, "127.1.0.4:1719");
    answered_call(&mut lab, &mut c, &mut d, guid(13));

    let stats = lab.gatekeeper.call_stats();
    assert_eq!(stats.bad[&BadSignal::Q931], 1);
    assert_eq!(stats.bad[&BadSignal::UnknownCall], 2);
    assert_eq!(stats.bad[&BadSignal::RepeatedSetup], 1);
    assert_eq!(stats.failed[&CallEnd::Malformed], 1);
    assert_eq!(stats.failed[&CallEnd::Stranger], 1);
    let _ = &mut a;
}

#[test]
fn an_unclaimed_connection_of_a_registered_ip_must_show_its_setup_in_time() {
    let mut lab = Lab::new(&topology(""));
    let a = lab.phone(6001, "127.1.0.1:1719");
    let before = lab.gatekeeper.clans()[0].sockets;
    // A second connection of a phone that has its socket: a call connection with a place.
    let extra = lab
        .gatekeeper
        .accept(lab.now, a.signal, addr("127.1.0.1:41000"))
        .expect("held for a Setup");
    let clans = lab.gatekeeper.clans();
    assert_eq!(clans[0].sockets, before + 1);
    assert_eq!(clans[0].call_connections, 1);
    // Nothing comes within setup_timeout_ms (500): reset, place freed, counted.
    lab.at_ms(500);
    let out = lab.commands();
    assert!(out.contains(&Command::Close {
        id: extra,
        reset: true
    }));
    assert_eq!(lab.gatekeeper.clans()[0].sockets, before);
    assert_eq!(lab.gatekeeper.call_stats().bad[&BadSignal::Unidentified], 1);
}

/// Found by the `relay` fuzz target (fuzz/regressions/relay-call-connection-over-cap): a
/// Setup on another phone's socket — two phones behind one IP — from a caller that waits for
/// its socket at another C-LAN makes the connection a call connection, which needs a place of
/// its own. With the C-LAN full it was taken anyway, four places under a cap of three; now
/// the Setup is released `gatekeeperResources` and the C-LAN stays within its cap.
#[test]
fn a_call_connection_never_takes_a_place_over_the_cap() {
    let toml = topology("").replace("max_sockets = 4", "max_sockets = 2");
    let mut lab = Lab::new(&toml);
    // X (127.1.0.1) at a with its socket; Y on the same IP waits at b; Z fills a.
    let x = lab.phone(6001, "127.1.0.1:1719");
    assert_eq!(x.signal, addr("127.0.1.1:1720"));
    let mut y = lab.register(6002, "127.1.0.1:1720");
    assert_eq!(y.signal, addr("127.0.1.2:1720"), "the lighter C-LAN");
    let z = lab.phone(6003, "127.1.0.3:1719");
    assert_eq!(z.signal, addr("127.0.1.1:1720"));
    assert_eq!(lab.gatekeeper.clans()[0].sockets, 2, "a is full");
    // Y's Setup arrives on X's socket at a.
    lab.arq(&mut y, 6003, guid(20));
    let xa = x.socket.unwrap();
    lab.send(xa, &setup(&y, 6003, 8, guid(20)));
    let out = lab.commands();
    assert_eq!(
        written(&out, xa),
        [(
            MessageType::ReleaseComplete,
            CallReference::to_originator(8),
            Some(47)
        )],
        "no room on a: gatekeeperResources"
    );
    let a = &lab.gatekeeper.clans()[0];
    assert!(
        a.sockets <= a.max_sockets,
        "{} of {}",
        a.sockets,
        a.max_sockets
    );
    assert_eq!(lab.gatekeeper.call_stats().failed[&CallEnd::NoRoom], 1);
}

/// Found by the `relay` fuzz target (fuzz/regressions/relay-connect-from-clan-out-of-service):
/// taking a C-LAN out of service unregisters its phones one by one, and one of them freeing
/// an establishment slot started the next TTS set-up queued there — a connect from a C-LAN
/// already out of service. None may start there now.
#[test]
fn no_connect_leaves_a_clan_out_of_service() {
    let toml = topology("setup_ms = 100\nmax_setups_per_clan = 1")
        .replace("max_sockets = 4", "max_sockets = 10");
    let mut lab = Lab::new(&toml);
    for other in ["b", "c"] {
        let other = lab.gatekeeper.clan_by_name(other).unwrap();
        let _ = lab.gatekeeper.set_in_service(lab.now, other, false);
    }
    // A non-TTS phone's connection holds a's one establishment slot (setup_ms 100); a TTS
    // phone's set-up waits behind it.
    lab.phone(6001, "127.1.0.1:1719");
    lab.register(5001, "127.1.0.2:1719");
    assert_eq!(
        lab.gatekeeper.clans()[0].queued,
        1,
        "{:?}",
        lab.gatekeeper.clans()[0]
    );
    let a = lab.gatekeeper.clan_by_name("a").unwrap();
    let _ = lab.gatekeeper.set_in_service(lab.now, a, false);
    let out = lab.commands();
    let from_a = out
        .iter()
        .any(|c| matches!(c, Command::Connect { from, .. } if from.to_string() == "127.0.1.1"));
    assert!(!from_a, "a connect from a C-LAN out of service: {out:?}");
}
