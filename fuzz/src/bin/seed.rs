//! Writes the seed corpora of the four targets into `<corpus dir>/decode`,
//! `<corpus dir>/handle`, `<corpus dir>/q931` and `<corpus dir>/relay`:
//!
//! - `decode`: the encodings of the messages the benches measure, plus the UDP payloads of
//!   the RAS captures given on the command line;
//! - `q931`: every message the `rasgk::q931` builders write (each Release Complete reason),
//!   a relayed Setup, and the same with 1- and 0-octet call references;
//! - `handle`: scripts (see `rasgk_fuzz`) of phones registering, keeping alive, calling and
//!   unregistering, a C-LAN fault, a GRQ flood and bad datagrams — each made by running the
//!   script's phones against the fuzz configuration, so every RRQ goes to the C-LAN its GCF
//!   named. Every script is run through the target's checks once before it is written.
//! - `relay`: scripts (see `rasgk_fuzz::relay`) of routed calls: a whole call between two
//!   phones' sockets, a callee without a socket that the gatekeeper connects to (and one it
//!   cannot reach), TTS phones' sockets and a call nobody answers, a C-LAN fault mid-call,
//!   two phones behind one IP, and garbage on the connections — each made by running the
//!   steps through the target's interpreter (so connection indexes name what the script
//!   means), which checks the invariants after every step.
//!
//! `cargo run --bin seed -- <corpus dir> <capture.pcap>...` (see `fuzz/seed`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rasgk::gatekeeper::{CallEnd, Gatekeeper};
use rasgk::phone::{Answer, Phone};
use rasgk::q931::{self, CallReference, Release, Setup};
use rasgk::ras::{encode, Alias};
use rasgk_fuzz::relay::{self, Glue, Lab};
use rasgk_fuzz::Step;

#[path = "../../../benches/support/messages.rs"]
mod messages;
use messages::messages;

/// A script being written: the gatekeeper it runs against, so replies steer the phones.
struct Script {
    gatekeeper: Gatekeeper,
    locals: Vec<SocketAddr>,
    now: Instant,
    steps: Vec<Step>,
}

impl Script {
    fn new() -> Script {
        let gatekeeper = Gatekeeper::new(rasgk_fuzz::config()).expect("the fuzz config starts");
        let locals = gatekeeper.local_addresses();
        Script {
            gatekeeper,
            locals,
            now: Instant::now(),
            steps: Vec::new(),
        }
    }

    /// Sends `payload` from source octet `source` to `local` after `advance` × 50 ms; the
    /// replies.
    fn send(
        &mut self,
        source: u8,
        local: SocketAddr,
        advance: u8,
        payload: Vec<u8>,
    ) -> Vec<Answer> {
        self.now += Duration::from_millis(50 * u64::from(advance));
        if self
            .gatekeeper
            .poll_timeout()
            .is_some_and(|due| due <= self.now)
        {
            let _ = self.gatekeeper.handle_timeout(self.now);
        }
        let index = self
            .locals
            .iter()
            .position(|&l| l == local)
            .expect("a local address");
        let out = self
            .gatekeeper
            .handle(self.now, local, rasgk_fuzz::source(source), &payload);
        self.steps.push(Step {
            source,
            local: index as u8,
            advance,
            payload,
        });
        out.iter()
            .filter_map(|t| Answer::read(&t.payload).ok())
            .collect()
    }

    fn toggle(&mut self, clan: u8) {
        let _ = self
            .gatekeeper
            .set_in_service(self.now, usize::from(clan), false);
        self.steps.push(Step {
            source: 0,
            local: 0x80 | clan,
            advance: 1,
            payload: Vec::new(),
        });
    }

    /// GRQ and RRQ at the C-LAN the GCF names; the phone learns its endpoint id.
    fn register(&mut self, source: u8, phone: &mut Phone) {
        let discovery = self.locals[0];
        let grq = phone.grq();
        for answer in self.send(source, discovery, 1, grq) {
            phone.learn(&answer);
            if let Answer::Gcf {
                ras_address: Some(clan),
                ..
            } = answer
            {
                let rrq = phone.rrq();
                for answer in self.send(source, clan, 1, rrq) {
                    phone.learn(&answer);
                }
            }
        }
    }
}

fn phone(source: u8, extension: u32) -> Phone {
    Phone::extension(extension, rasgk_fuzz::source(source))
}

fn handle_seeds() -> Vec<(&'static str, Vec<Step>)> {
    let mut seeds = Vec::new();

    // One phone's life: register, retransmit, keep alive, call, unregister.
    let mut s = Script::new();
    let mut p = phone(1, 60001);
    s.register(1, &mut p);
    let clan = s.locals[1];
    let rrq = p.rrq();
    s.send(1, clan, 0, rrq.clone());
    s.send(1, clan, 2, rrq);
    if let Some(keep_alive) = p.keep_alive() {
        s.send(1, clan, 200, keep_alive);
    }
    if let Some(arq) = p.arq("960001", [7; 16]) {
        s.send(1, clan, 1, arq);
    }
    if let Some(drq) = p.drq([7; 16]) {
        s.send(1, clan, 1, drq);
    }
    let urq = p.urq();
    s.send(1, clan, 1, urq);
    seeds.push(("life", s.steps));

    // Phones of three regions fill C-LANs; one goes out of service; they come back.
    let mut s = Script::new();
    let mut phones: Vec<(u8, Phone)> = (0..12u8)
        .map(|i| (i, phone(i, 50000 + u32::from(i) * 7)))
        .collect();
    for (source, p) in &mut phones {
        s.register(*source, p);
    }
    s.toggle(0);
    for (source, p) in phones.iter_mut().take(4) {
        s.register(*source, p);
    }
    seeds.push(("fault", s.steps));

    // A flood of GRQs from one source, over its rate, then a late RRQ.
    let mut s = Script::new();
    let mut p = phone(9, 60009);
    for _ in 0..30 {
        let grq = p.grq();
        s.send(9, s.locals[0], 0, grq);
    }
    let rrq = p.rrq();
    s.send(9, s.locals[1], 40, rrq);
    seeds.push(("flood", s.steps));

    // Bad datagrams: nothing, garbage, a GRQ cut short, a GRQ with a trailing octet.
    let mut s = Script::new();
    let mut p = phone(2, 60002);
    let grq = p.grq();
    for payload in [
        Vec::new(),
        vec![0xff; 3],
        grq[..grq.len() / 2].to_vec(),
        [grq.clone(), vec![0]].concat(),
    ] {
        s.send(2, s.locals[0], 1, payload);
    }
    s.register(2, &mut p);
    seeds.push(("bad", s.steps));
    seeds
}

/// A `relay` script being written: the interpreter it runs through, so that connection
/// indexes and pending connects name what the script means.
struct Routed {
    lab: Lab,
    steps: Vec<relay::Step>,
}

/// Op 5's kinds (module doc of `rasgk_fuzz::relay`).
const SETUP: u8 = 0;
const CALL_PROCEEDING: u8 = 1;
const ALERTING: u8 = 2;
const CONNECT: u8 = 3;
const RELEASE: u8 = 4;
const ANY: u8 = 5;
/// Op 5's call reference choices: the latest the gatekeeper wrote (answered), the latest the
/// peer sent, an explicit one.
const ANSWER: u8 = 0;
const OWN: u8 = 0x40;
const EXPLICIT: u8 = 0x80;

impl Routed {
    fn new() -> Routed {
        Routed {
            lab: Lab::new(),
            steps: Vec::new(),
        }
    }

    fn go(&mut self, step: relay::Step) {
        self.lab.step(&step);
        self.steps.push(step);
    }

    /// Time passes, `ms` rounded down to 50 ms (at most 12.75 s).
    fn wait_ms(&mut self, ms: u64) {
        self.go(relay::Step::new(0, (ms / 50).min(255) as u8, 0));
    }

    fn wait_s(&mut self, s: u8) {
        self.go(relay::Step::new(0, s, 1));
    }

    /// Phone `who` connects where its RCF said; the new connection's index.
    fn accept(&mut self, who: u8) -> u8 {
        self.accept_at(who, 0)
    }

    /// Phone `who` connects to C-LAN `at - 1` (0: where its RCF said); the new connection's
    /// index (the last one when refused).
    fn accept_at(&mut self, who: u8, at: u8) -> u8 {
        self.go(relay::Step::new(1, who, at));
        self.lab.connections.len().saturating_sub(1) as u8
    }

    /// The index of the latest connection the gatekeeper asked to open.
    fn last_connect(&self) -> u8 {
        let at = self
            .lab
            .connections
            .iter()
            .rposition(|c| c.glue == Glue::Pending)
            .expect("a connect pending");
        at as u8
    }

    /// The connect of connection `index` completes (or fails).
    fn outcome(&mut self, index: u8, failed: bool) {
        let id = self.lab.connections[usize::from(index)].id;
        let at = self
            .lab
            .pending()
            .iter()
            .position(|&p| p == id)
            .expect("a pending connect");
        self.go(relay::Step::new(2, at as u8, u8::from(failed)));
    }

    /// Every pending connect completes.
    fn connect_all(&mut self) {
        while !self.lab.pending().is_empty() {
            self.go(relay::Step::new(2, 0, 0));
        }
    }

    fn close(&mut self, index: u8, how: u8) {
        self.go(relay::Step::new(3, index, how));
    }

    fn octets(&mut self, index: u8, octets: &[u8]) {
        self.go(relay::Step::with(4, index, 0, octets));
    }

    /// A Setup on connection `index` from phone `caller` to phone `callee`.
    fn setup(&mut self, index: u8, caller: u8, callee: u8, crv: u16, call: u8) {
        let [high, low] = crv.to_be_bytes();
        self.go(relay::Step::with(
            5,
            index,
            SETUP,
            [caller, callee, high, low, call, 0],
        ));
    }

    /// A message of `kind` on connection `index`, its call reference chosen by `choice`.
    fn say(&mut self, index: u8, kind: u8, choice: u8, call: u8) {
        self.go(relay::Step::with(5, index, kind, [choice, 0, 0, 0, call]));
    }

    fn ras(&mut self, phone: u8, what: u8, params: &[u8]) {
        self.go(relay::Step::with(6, phone, what, params));
    }

    fn toggle(&mut self, clan: u8) {
        self.go(relay::Step::new(7, clan, 0));
    }

    /// The script so far, once it has reached what it is for: calls answered, and how
    /// many calls (or refused Setups) ended for each reason named.
    fn done(self, answered: u64, ended: &[(CallEnd, u64)]) -> Vec<relay::Step> {
        let stats = self.lab.gatekeeper.call_stats();
        assert_eq!(stats.connected, answered, "calls answered: {stats:?}");
        for &(reason, count) in ended {
            assert_eq!(
                stats.ended.get(&reason).copied().unwrap_or(0),
                count,
                "{reason:?}: {stats:?}"
            );
        }
        self.steps
    }

    /// The index of C-LAN `name` plus one (for `accept_at`).
    fn clan(&self, name: &str) -> u8 {
        let at = self.lab.gatekeeper.clan_by_name(name).expect("a C-LAN");
        at as u8 + 1
    }
}

/// The relay target's phones by index (`rasgk_fuzz::relay::PHONES`).
const P6001: u8 = 0;
const P6002: u8 = 1;
const P6003: u8 = 2;
const P5001: u8 = 3;
const P5002: u8 = 4;
const P6004: u8 = 5;
/// ARQ, DRQ, URQ, GRQ + RRQ, keep-alive, UCF.
const ARQ: u8 = 0;
const DRQ: u8 = 1;
const URQ: u8 = 2;
const REGISTER: u8 = 3;
const KEEP_ALIVE: u8 = 4;
const UCF: u8 = 5;

/// A call answered between the sockets of 6001 and 6003 (the TTS phones' sockets up too):
/// ARQ, Setup, Call Proceeding, Alerting, Connect. The caller's and the callee's connection.
fn answered_call(s: &mut Routed, call: u8) -> (u8, u8) {
    let caller = s.accept(P6001);
    let callee = s.accept(P6003);
    s.connect_all();
    s.wait_ms(150);
    s.ras(P6001, ARQ, &[P6003, call]);
    s.setup(caller, P6001, P6003, 77, call);
    s.say(callee, CALL_PROCEEDING, ANSWER, call);
    s.say(callee, ALERTING, ANSWER, call);
    s.wait_ms(1000);
    s.say(callee, CONNECT, ANSWER, call);
    (caller, callee)
}

fn relay_seeds() -> Vec<(&'static str, Vec<relay::Step>)> {
    let mut seeds = Vec::new();

    // A whole call, released by the caller; the callee's own Release Complete crosses it.
    let mut s = Routed::new();
    let (caller, callee) = answered_call(&mut s, 1);
    s.wait_s(2);
    s.say(caller, RELEASE, OWN, 1);
    s.say(callee, RELEASE, ANSWER, 1);
    s.ras(P6001, DRQ, &[1]);
    s.ras(P6003, DRQ, &[1]);
    s.wait_s(5);
    seeds.push(("call", s.done(1, &[(CallEnd::CallerReleased, 1)])));

    // A callee without a socket: the gatekeeper connects to it from its C-LAN and writes the
    // Setup first. Then a second call whose connect fails, and a third whose times out.
    let mut s = Routed::new();
    let caller = s.accept(P6001);
    s.wait_ms(150);
    s.setup(caller, P6001, P6002, 5, 2);
    let opened = s.last_connect();
    s.outcome(opened, false);
    s.wait_ms(150);
    s.say(opened, ALERTING, ANSWER, 2);
    s.say(opened, CONNECT, ANSWER, 2);
    s.say(opened, RELEASE, ANSWER, 2);
    s.close(opened, 0);
    s.setup(caller, P6001, P6002, 6, 3);
    let opened = s.last_connect();
    s.outcome(opened, true);
    s.setup(caller, P6001, P6002, 7, 4);
    let given_up = s.last_connect();
    s.wait_ms(600);
    s.outcome(given_up, true);
    s.wait_s(2);
    let ended = [(CallEnd::CalleeReleased, 1), (CallEnd::Unreachable, 2)];
    seeds.push(("connect", s.done(1, &ended)));

    // TTS phones: their sockets come up (service frames); a call to one over its socket,
    // ended by its DRQ; a call to the other that nobody answers; a TTS socket closed.
    let mut s = Routed::new();
    s.connect_all();
    s.wait_ms(150);
    let caller = s.accept(P6001);
    s.wait_ms(150);
    s.ras(P6001, ARQ, &[P5001, 5]);
    s.setup(caller, P6001, P5001, 9, 5);
    let tts = s.lab.index(first_call_connection(&s.lab)).unwrap_or(0);
    s.say(tts as u8, ALERTING, ANSWER, 5);
    s.say(tts as u8, CONNECT, ANSWER, 5);
    s.ras(P5001, DRQ, &[5]);
    s.setup(caller, P6001, P5002, 10, 6);
    s.wait_s(6);
    s.close(0, 1);
    s.wait_s(3);
    let ended = [(CallEnd::Disengaged, 1), (CallEnd::NoAnswer, 1)];
    seeds.push(("tts", s.done(1, &ended)));

    // A C-LAN fault mid-call: the callee's C-LAN goes out of service, its phone is sent a
    // URQ, answers it and registers again elsewhere; the C-LAN comes back.
    let mut s = Routed::new();
    let (caller, callee) = answered_call(&mut s, 7);
    s.toggle(2);
    s.say(caller, RELEASE, OWN, 7);
    s.say(callee, ALERTING, ANSWER, 7);
    s.ras(P6003, UCF, &[]);
    s.ras(P6003, REGISTER, &[]);
    s.accept(P6003);
    s.toggle(2);
    s.wait_s(4);
    s.ras(P6003, KEEP_ALIVE, &[]);
    s.ras(P6001, URQ, &[]);
    seeds.push(("fault", s.done(1, &[(CallEnd::ClanOutOfService, 1)])));

    // Two phones behind one IP at one C-LAN (6004 moves to a when b leaves service): 6004's
    // connection goes to 6001 by its IP, 6004's Setup takes it over, and the call to 6001
    // gets a connection the gatekeeper opens.
    let mut s = Routed::new();
    s.toggle(1);
    s.ras(P6004, UCF, &[]);
    s.ras(P6004, REGISTER, &[]);
    let shared = s.accept(P6004);
    s.wait_ms(150);
    s.ras(P6004, ARQ, &[P6001, 3]);
    s.setup(shared, P6004, P6001, 3, 3);
    let opened = s.last_connect();
    s.outcome(opened, false);
    s.wait_ms(150);
    s.say(opened, CONNECT, ANSWER, 3);
    s.say(shared, RELEASE, OWN, 3);
    seeds.push(("shared-ip", s.done(1, &[(CallEnd::CallerReleased, 1)])));

    // Garbage: no TPKT at all, a frame that is no Q.931, a message and a Release Complete
    // for no call, a Setup whose user-user information does not decode, a Setup naming
    // another phone, a stranger's and a busy C-LAN's connections, frames split and
    // oversized, and 20 Setups from one phone.
    let mut s = Routed::new();
    let a = s.accept(P6001);
    s.octets(a, b"hello");
    let a = s.accept(P6001);
    s.wait_ms(150);
    s.octets(a, &[3, 0, 0, 9, b'h', b'e', b'l', b'l', b'o']);
    s.say(a, ALERTING, EXPLICIT, 1);
    s.say(a, RELEASE, EXPLICIT, 1);
    s.go(relay::Step::with(5, a, ANY, [OWN, 0x05, 0xff, 0xff, 0xff]));
    s.setup(a, P6002, P6003, 11, 1);
    s.accept(6);
    s.accept_at(P6002, s.clan("c"));
    let b = s.accept(P6002);
    let (head, tail) = [3u8, 0, 0, 20, 8, 2, 0, 1, 0x05].split_at(3);
    s.octets(b, head);
    s.octets(b, tail);
    s.octets(b, &[3, 0, 0x10, 0]);
    for crv in 100..120 {
        s.setup(a, P6001, P6003, crv, (crv % 8) as u8);
    }
    s.wait_s(10);
    let ended = [
        (CallEnd::Malformed, 1),
        (CallEnd::Stranger, 1),
        (CallEnd::TooManyCalls, 4),
    ];
    seeds.push(("garbage", s.done(0, &ended)));
    seeds
}

/// The connection of the first call's callee leg, as the core names it.
fn first_call_connection(lab: &Lab) -> rasgk::gatekeeper::ConnectionId {
    lab.gatekeeper
        .routed_calls(lab.now)
        .first()
        .and_then(|call| call.callee_leg.connection)
        .expect("a call with its callee leg up")
}

fn write_decode_seeds(
    dir: &Path,
    captures: &[PathBuf],
) -> Result<usize, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let mut written = 0;
    for (name, message) in messages() {
        std::fs::write(dir.join(format!("seed-{name}")), encode(&message)?)?;
        written += 1;
    }
    for capture in captures {
        let stem = capture
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let datagrams = rasgk::pcap::read_file(capture)?.datagrams;
        for datagram in &datagrams {
            let file = dir.join(format!("pcap-{stem}-{:05}", datagram.frame));
            std::fs::write(file, &datagram.payload)?;
            written += 1;
        }
        eprintln!("{}: {} datagrams", capture.display(), datagrams.len());
    }
    Ok(written)
}

/// Every message the call-signalling builders write, a relayed Setup, and shorter call
/// references, with their names.
fn q931_seeds() -> Vec<(String, Vec<u8>)> {
    let (call_id, conference_id) = ([0x5d; 16], [0x11; 16]);
    let caller = CallReference::from_originator(0x1234);
    let callee = CallReference::to_originator(0x0042);
    let source = [
        Alias::dialled_digits("50001").expect("digits"),
        Alias::h323_id("Zoë").expect("a name"),
    ];
    let destination = [Alias::dialled_digits("50002").expect("digits")];
    let setup = q931::setup(&Setup {
        call_reference: caller,
        call_identifier: call_id,
        conference_id,
        source: &source,
        destination: &destination,
        display: Some("Zoe"),
        endpoint_identifier: None,
    })
    .expect("the Setup is valid");
    let mut seeds = vec![
        ("setup".to_string(), setup.to_vec()),
        (
            "call-proceeding".to_string(),
            q931::call_proceeding(callee, call_id).to_vec(),
        ),
        (
            "alerting".to_string(),
            q931::alerting(callee, call_id).to_vec(),
        ),
        (
            "connect".to_string(),
            q931::connect(callee, call_id, conference_id).to_vec(),
        ),
    ];
    for release in Release::ALL {
        let octets = q931::release_complete(caller.reversed(), Some(call_id), release);
        seeds.push((format!("release-{release:?}"), octets.to_vec()));
    }
    let relayed = q931::with_call_reference(&setup, callee.reversed()).expect("a Setup");
    seeds.push(("setup-relayed".to_string(), relayed.to_vec()));
    // The Setup with a 1-octet and a 0-octet call reference (header 08 LL [CRV] 05 …).
    let rest = &setup[4..];
    seeds.push((
        "setup-crv1".to_string(),
        [&[0x08, 0x01, 0x05][..], rest].concat(),
    ));
    seeds.push(("setup-crv0".to_string(), [&[0x08, 0x00][..], rest].concat()));
    seeds
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or("usage: seed <corpus dir> <capture.pcap>...")?,
    );
    let captures: Vec<PathBuf> = args.map(PathBuf::from).collect();
    let decode = write_decode_seeds(&dir.join("decode"), &captures)?;
    eprintln!("{decode} seeds in {}", dir.join("decode").display());
    let handle_dir = dir.join("handle");
    std::fs::create_dir_all(&handle_dir)?;
    let seeds = handle_seeds();
    for (name, steps) in &seeds {
        let data = rasgk_fuzz::write(steps);
        assert_eq!(
            &rasgk_fuzz::parse(&data),
            steps,
            "{name}: a script reads back"
        );
        rasgk_fuzz::run(&data);
        std::fs::write(handle_dir.join(format!("script-{name}")), data)?;
    }
    eprintln!("{} seeds in {}", seeds.len(), handle_dir.display());
    let q931_dir = dir.join("q931");
    std::fs::create_dir_all(&q931_dir)?;
    let seeds = q931_seeds();
    for (name, octets) in &seeds {
        q931::facts(octets).map_err(|e| format!("seed {name} does not read: {e}"))?;
        std::fs::write(q931_dir.join(format!("seed-{name}")), octets)?;
    }
    eprintln!("{} seeds in {}", seeds.len(), q931_dir.display());
    let relay_dir = dir.join("relay");
    std::fs::create_dir_all(&relay_dir)?;
    let seeds = relay_seeds();
    for (name, steps) in &seeds {
        let data = relay::write(steps);
        assert_eq!(&relay::parse(&data), steps, "{name}: a script reads back");
        // Made through the interpreter already; run again as the target reads it.
        relay::run(&data);
        std::fs::write(relay_dir.join(format!("script-{name}")), data)?;
    }
    eprintln!("{} seeds in {}", seeds.len(), relay_dir.display());
    Ok(())
}
