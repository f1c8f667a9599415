//! What the `relay` target does, shared with the seed writer (which runs on stable Rust): the
//! routed-call core of socket mode (docs/rules.md §8.4–§8.7) driven as the server's glue
//! drives it — connections accepted and opened, frames read, closes — in virtual time, with
//! phones registered before the script starts. After every step the invariants that must
//! hold whatever peers do are checked.
//!
//! An input is a script of steps, 4 header octets and a payload each:
//!
//! ```text
//!   op  a  b  length   payload (length octets, fewer at the end of the input)
//! ```
//!
//! `op % 8` says what happens; `a`, `b` and the payload are its arguments. Phones are the
//! six of [`PHONES`], `j`/`k` taken modulo 6 (7 where the seventh is an extension nobody
//! has); connections are every connection known so far — each accepted one and each one the
//! gatekeeper asked to open, in that order — taken modulo their count.
//!
//! | op | what | arguments |
//! |----|------|-----------|
//! | 0 | time passes; the timers due run, in order | `a` × 50 ms, or × 1 s when `b` is odd |
//! | 1 | a connection is opened to a C-LAN's signalling address (`accept`) | `a % 8`: phone 0–5 or a stranger (6, 7); `b % 4`: 0 where the phone's RCF said, else C-LAN `b - 1` |
//! | 2 | a pending `Connect` completes or fails | `a`: which of those still pending; `b` odd: failed |
//! | 3 | the peer closes a connection (a pending connect: it fails) | `a`: connection; `b % 3`: FIN, RST, keep-alive |
//! | 4 | octets arrive on a connection, through the glue's TPKT reader | `a`: connection; the payload |
//! | 5 | a well-formed Q.931 message arrives on a connection | `a`: connection; `b % 6`: kind (below); the payload: its parameters |
//! | 6 | a phone's RAS request | `a`: phone; `b % 6`: ARQ, DRQ, URQ, GRQ + RRQ, keep-alive, UCF |
//! | 7 | the administrator takes a C-LAN out of or back into service | `a % 3`: C-LAN |
//!
//! Op 5's kinds: 0 Setup from phone `p[0]` to phone `p[1]`'s extension with call reference
//! `p[2..4]`, call `p[4] % 8`, flags `p[5]` (bit 0: no `endpointIdentifier`, bit 1: no
//! source alias); 1 Call Proceeding, 2 Alerting, 3 Connect, 4 Release Complete (reason
//! `p[4]`), 5 any message type `p[1]` with `p[2..]` as its User-user content. The call
//! reference of kinds 1–5 is chosen by `p[0]`: by default the `p[0] % 4`-th latest one the
//! gatekeeper wrote on that connection, as its peer answers it (flag inverted); with bit
//! 0x40 the latest the peer itself sent there; with bit 0x80 value `p[1..3]`, flag bit 0x20
//! of `p[0]`. Op 6's ARQ goes to phone `p[0]` for call `p[1] % 8`, its DRQ for call `p[0] %
//! 8`; the UCF answers the last URQ the gatekeeper sent the phone.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rasgk::config::{self, Config};
use rasgk::gatekeeper::{Closing, Command, ConnectionId, Gatekeeper, Transmit};
use rasgk::phone::{Answer, Phone};
use rasgk::q931::{self, CallReference, Message, MessageType, MessageWriter, Release};
use rasgk::ras::Alias;
use rasgk::tpkt;

/// The phones registered before every script: (extension, RAS address). Extensions 5* are
/// TTS phones; the last phone shares its IP with the first (two endpoints behind one
/// address, docs/rules.md §8.3).
pub const PHONES: [(u32, [u8; 4], u16); 6] = [
    (6001, [127, 1, 0, 1], 1719),
    (6002, [127, 1, 0, 2], 1719),
    (6003, [127, 2, 0, 1], 1719),
    (5001, [127, 1, 0, 3], 1719),
    (5002, [127, 2, 0, 2], 1719),
    (6004, [127, 1, 0, 1], 1720),
];

/// The extension a Setup or an ARQ names when its phone index is the seventh.
pub const NOBODY: u32 = 6999;

/// Source IPs with no registered phone.
const STRANGERS: [[u8; 4]; 2] = [[127, 1, 9, 9], [127, 3, 0, 1]];

/// Calls in progress a phone may have as the caller (docs/rules.md §8.7).
const CALLS_PER_PHONE: usize = 16;

/// Rounds of timers one clock step may run (each strictly later than the one before).
const MAX_TIMER_ROUNDS: usize = 100_000;

const TOPOLOGY: &str = r#"
[gatekeeper]
sockets = "tcp"
call_signalling = "routed"
call_setup_timeout_s = 5
setup_timeout_ms = 500
setup_ms = 100
max_setups_per_clan = 2
ttl_s = 60
gcf_hold_s = 2
seed = 1

[limits]
max_frame_octets = 512

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
max_sockets = 3
[[clan]]
name = "b"
region = 1
address = "127.0.1.2:1719"
max_sockets = 3
[[clan]]
name = "c"
region = 2
address = "127.0.2.1:1719"
max_sockets = 4

[[tts]]
aliases = ["5*"]
"#;

/// Three C-LANs in two regions with room for 3, 3 and 4 phones, routed calls over real
/// sockets, two establishments at once per C-LAN, short timeouts (a connect 500 ms, an
/// establishment 100 ms, an answer 5 s, a registration 60 s), TTS for 5*. Parsed once.
pub fn config() -> Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            config::from_toml(TOPOLOGY, "relay.toml").expect("the relay configuration reads")
        })
        .clone()
}

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What happens (`% 8`, see the module doc).
    pub op: u8,
    /// First argument.
    pub a: u8,
    /// Second argument.
    pub b: u8,
    /// Octets or parameters.
    pub payload: Vec<u8>,
}

impl Step {
    /// A step without payload.
    pub fn new(op: u8, a: u8, b: u8) -> Step {
        Step {
            op,
            a,
            b,
            payload: Vec::new(),
        }
    }

    /// A step with a payload.
    pub fn with(op: u8, a: u8, b: u8, payload: impl Into<Vec<u8>>) -> Step {
        Step {
            op,
            a,
            b,
            payload: payload.into(),
        }
    }
}

/// The steps of an input (a short last payload is taken as it is).
pub fn parse(data: &[u8]) -> Vec<Step> {
    crate::frames(data)
        .into_iter()
        .map(|([op, a, b], payload)| Step::with(op, a, b, payload))
        .collect()
}

/// The input of some steps (payloads longer than 255 octets are cut).
pub fn write(steps: &[Step]) -> Vec<u8> {
    crate::write_frames(
        steps
            .iter()
            .map(|s| ([s.op, s.a, s.b], s.payload.as_slice())),
    )
}

/// Runs a script against a fresh gatekeeper with its phones registered, checking the
/// invariants after every step; panics (a finding) when one breaks.
pub fn run(data: &[u8]) {
    let mut lab = Lab::new();
    for step in parse(data) {
        lab.step(&step);
    }
}

/// A connection as the glue sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Glue {
    /// A `Connect` with no outcome reported yet.
    Pending,
    /// Accepted, or connected.
    Open,
    /// The peer closed it, or the connect failed (reported): nothing more comes of it.
    Gone,
}

/// One connection known to the script.
#[derive(Debug, Clone)]
pub struct Connection {
    /// The core's number.
    pub id: ConnectionId,
    /// Its C-LAN (index in configuration order).
    pub clan: usize,
    /// Where it stands for the glue.
    pub glue: Glue,
    /// The core asked to close it (it forgets it; a few events may still cross).
    pub closed_by_core: bool,
    /// A bad frame stopped the reading (the glue reads nothing more).
    pub unreadable: bool,
    reader: tpkt::Assembler,
    /// Call references of the Q.931 messages the gatekeeper wrote on it, latest last (a
    /// few).
    written: Vec<CallReference>,
    /// Call references of the Q.931 messages the peer sent on it, latest last (a few).
    sent: Vec<CallReference>,
}

impl Connection {
    /// Up, as far as the core may know: accepted or connected, and closed by neither side.
    pub fn live(&self) -> bool {
        self.glue == Glue::Open && !self.closed_by_core
    }
}

/// A registered phone of the lab.
#[derive(Debug, Clone)]
pub struct Station {
    /// Its RAS side.
    pub phone: Phone,
    /// Its extension.
    pub extension: u32,
    /// The C-LAN its last GCF named (where its RAS requests go).
    pub ras_clan: Option<SocketAddr>,
    /// Where its last RCF told it to connect.
    pub signal: Option<SocketAddr>,
    /// The last URQ the gatekeeper sent it: its sequence number and the address it came
    /// from.
    pub urq: Option<(u16, SocketAddr)>,
}

/// The gatekeeper, its phones and its connections, driven as the glue drives them.
pub struct Lab {
    /// The core.
    pub gatekeeper: Gatekeeper,
    /// Virtual time.
    pub now: Instant,
    /// The phones of [`PHONES`].
    pub stations: Vec<Station>,
    /// Every connection known, in the order the script indexes them.
    pub connections: Vec<Connection>,
    by_id: HashMap<ConnectionId, usize>,
    locals: Vec<SocketAddr>,
    discovery: SocketAddr,
    /// Per C-LAN: its signalling address and its IP (where its connects come from).
    signals: Vec<SocketAddr>,
    clan_ips: Vec<IpAddr>,
    max_setups: u32,
    max_frame: u16,
    next_port: u16,
    /// Release Completes the peers sent, under call reference 0: the gatekeeper relays
    /// them as they are, so they need not read as its own.
    peer_releases: HashSet<Vec<u8>>,
    /// Q.931 messages the gatekeeper wrote.
    messages_written: u64,
}

impl Default for Lab {
    fn default() -> Lab {
        Lab::new()
    }
}

impl Lab {
    /// A fresh gatekeeper with the phones of [`PHONES`] registered (GRQ, then RRQ where the
    /// GCF said); no connection is up yet, the TTS phones' connects are pending.
    pub fn new() -> Lab {
        let config = config();
        let discovery = config.gatekeeper.discovery;
        let max_setups = config.gatekeeper.max_setups_per_clan;
        let max_frame = config.limits.max_frame_octets;
        let gatekeeper = Gatekeeper::new(config).expect("the relay configuration starts");
        let locals = gatekeeper.local_addresses();
        let signal_addresses = gatekeeper.signal_addresses();
        let signals: Vec<SocketAddr> = signal_addresses.iter().map(|(a, _)| *a).collect();
        let clan_ips = gatekeeper
            .config()
            .clans
            .iter()
            .map(|c| c.address.ip())
            .collect();
        let stations = PHONES
            .iter()
            .map(|&(extension, ip, port)| Station {
                phone: Phone::extension(extension, SocketAddr::from((ip, port))),
                extension,
                ras_clan: None,
                signal: None,
                urq: None,
            })
            .collect();
        let mut lab = Lab {
            gatekeeper,
            now: Instant::now(),
            stations,
            connections: Vec::new(),
            by_id: HashMap::new(),
            locals,
            discovery,
            signals,
            clan_ips,
            max_setups,
            max_frame,
            next_port: 40_000,
            peer_releases: HashSet::new(),
            messages_written: 0,
        };
        for j in 0..PHONES.len() {
            lab.register(j);
        }
        lab.check();
        lab
    }

    /// Carries out one step, then checks the invariants.
    pub fn step(&mut self, step: &Step) {
        match step.op % 8 {
            0 => {
                let unit = if step.b & 1 == 1 { 1000 } else { 50 };
                self.advance(Duration::from_millis(unit * u64::from(step.a)));
            }
            1 => self.accept(step.a, step.b),
            2 => self.outcome(step.a, step.b & 1 == 1),
            3 => self.close(step.a, step.b),
            4 => self.octets(step.a, &step.payload),
            5 => self.message(step.a, step.b, &step.payload),
            6 => self.ras(step.a, step.b, &step.payload),
            _ => {
                let clan = usize::from(step.a) % self.signals.len();
                let in_service = self.gatekeeper.clans()[clan].in_service;
                let out = self.gatekeeper.set_in_service(self.now, clan, !in_service);
                self.transmits(out);
                self.commands();
            }
        }
        self.check();
    }

    /// The index of a connection in the script's numbering.
    pub fn index(&self, id: ConnectionId) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// The connects still pending, in the order op 2 indexes them.
    pub fn pending(&self) -> Vec<ConnectionId> {
        self.connections
            .iter()
            .filter(|c| c.glue == Glue::Pending)
            .map(|c| c.id)
            .collect()
    }

    /// Time passes: the timers due run at their own instants, in order.
    fn advance(&mut self, by: Duration) {
        let until = self.now + by;
        for _ in 0..MAX_TIMER_ROUNDS {
            let Some(due) = self.gatekeeper.poll_timeout().filter(|&due| due <= until) else {
                break;
            };
            self.now = self.now.max(due);
            let out = self.gatekeeper.handle_timeout(self.now);
            self.transmits(out);
            self.commands();
            if let Some(next) = self.gatekeeper.poll_timeout() {
                assert!(
                    next > self.now,
                    "handle_timeout left a deadline due {:?} before its own time: the \
                     server would spin",
                    self.now - next
                );
            }
        }
        self.now = until;
    }

    /// GRQ to the discovery address, then RRQ where the GCF says.
    fn register(&mut self, j: usize) {
        let grq = self.stations[j].phone.grq();
        let from = self.stations[j].phone.ras_address;
        let out = self.gatekeeper.handle(self.now, self.discovery, from, &grq);
        let answers = self.transmits(out);
        let clan = answers.iter().find_map(|a| match a {
            (to, Answer::Gcf { ras_address, .. }) if *to == from => *ras_address,
            _ => None,
        });
        if let Some(clan) = clan {
            self.stations[j].ras_clan = Some(clan);
            let rrq = self.stations[j].phone.rrq();
            let out = self.gatekeeper.handle(self.now, clan, from, &rrq);
            for (to, answer) in self.transmits(out) {
                if let Answer::Rcf {
                    call_signal_address,
                    ..
                } = answer
                {
                    if to == from {
                        self.stations[j].signal = call_signal_address;
                    }
                }
            }
        }
        self.commands();
    }

    /// A phone (or a stranger) opens a connection to a C-LAN's signalling address.
    fn accept(&mut self, who: u8, at: u8) {
        let who = usize::from(who) % (PHONES.len() + STRANGERS.len());
        let ip = match who.checked_sub(PHONES.len()) {
            Some(stranger) => IpAddr::from(STRANGERS[stranger]),
            None => self.stations[who].phone.ras_address.ip(),
        };
        let local = match usize::from(at) % (self.signals.len() + 1) {
            0 => self
                .stations
                .get(who)
                .and_then(|s| s.signal)
                .unwrap_or(self.signals[0]),
            n => self.signals[n - 1],
        };
        self.next_port = self.next_port.wrapping_add(1).max(1024);
        let from = SocketAddr::new(ip, self.next_port);
        let accepted = self.gatekeeper.accept(self.now, local, from);
        if let Ok(id) = accepted {
            let clan = self
                .signals
                .iter()
                .position(|&s| s == local)
                .unwrap_or_else(|| panic!("{id} accepted on {local}, no C-LAN's address"));
            assert!(
                self.gatekeeper.clans()[clan].in_service,
                "{id} accepted on C-LAN {clan}, out of service"
            );
            self.learn(id, clan, Glue::Open);
        }
        self.commands();
    }

    /// Takes in a connection the core handed out.
    fn learn(&mut self, id: ConnectionId, clan: usize, glue: Glue) {
        assert!(!self.by_id.contains_key(&id), "{id} handed out twice");
        self.by_id.insert(id, self.connections.len());
        self.connections.push(Connection {
            id,
            clan,
            glue,
            closed_by_core: false,
            unreadable: false,
            reader: tpkt::Assembler::new(self.max_frame),
            written: Vec::new(),
            sent: Vec::new(),
        });
    }

    /// The known connection `index` names (modulo their count).
    fn pick(&self, index: u8) -> Option<usize> {
        (!self.connections.is_empty()).then(|| usize::from(index) % self.connections.len())
    }

    /// A pending connect completes or fails.
    fn outcome(&mut self, index: u8, failed: bool) {
        let pending = self.pending();
        if pending.is_empty() {
            return;
        }
        let id = pending[usize::from(index) % pending.len()];
        let at = self.by_id[&id];
        if failed {
            self.connections[at].glue = Glue::Gone;
            self.gatekeeper.connect_failed(self.now, id);
        } else {
            self.connections[at].glue = Glue::Open;
            self.gatekeeper.connected(self.now, id);
        }
        self.commands();
    }

    /// The peer closes a connection; a connect still pending fails instead.
    fn close(&mut self, index: u8, how: u8) {
        let Some(at) = self.pick(index) else {
            return;
        };
        let id = self.connections[at].id;
        match self.connections[at].glue {
            Glue::Gone => return,
            Glue::Pending => self.gatekeeper.connect_failed(self.now, id),
            Glue::Open => {
                let how = [Closing::Fin, Closing::Reset, Closing::KeepAlive][usize::from(how) % 3];
                self.gatekeeper.closed(self.now, id, how);
            }
        }
        self.connections[at].glue = Glue::Gone;
        self.commands();
    }

    /// Octets arrive on a connection: the glue's TPKT reader splits them into frames, each
    /// whole frame goes to the core, then the count (or the bad frame, which ends reading).
    fn octets(&mut self, index: u8, octets: &[u8]) {
        let Some(at) = self.pick(index) else {
            return;
        };
        let connection = &mut self.connections[at];
        if connection.glue != Glue::Open || connection.unreadable {
            return;
        }
        let id = connection.id;
        let mut frames = Vec::new();
        let read = connection.reader.read(octets, &mut frames);
        connection.unreadable = read.is_err();
        for frame in &frames {
            if let Ok(message) = Message::parse(frame) {
                remember(&mut self.connections[at].sent, message.call_reference);
                if message.message_type == MessageType::ReleaseComplete {
                    if let Ok(moved) =
                        q931::with_call_reference(frame, CallReference::from_originator(0))
                    {
                        self.peer_releases.insert(moved.to_vec());
                    }
                }
            }
            self.gatekeeper.frame(self.now, id, frame);
        }
        self.gatekeeper.received(self.now, id, read);
        self.commands();
    }

    /// A well-formed message arrives on a connection (module doc, op 5).
    fn message(&mut self, index: u8, kind: u8, p: &[u8]) {
        let Some(at) = self.pick(index) else {
            return;
        };
        let param = |i: usize| p.get(i).copied().unwrap_or(0);
        let call = guid(param(4) % 8);
        let payload = match kind % 6 {
            0 => {
                let caller = &self.stations[usize::from(param(0)) % PHONES.len()];
                let callee = self.extension(param(1));
                let flags = param(5);
                let source =
                    [Alias::dialled_digits(&caller.extension.to_string()).expect("digits")];
                let destination = [Alias::dialled_digits(&callee.to_string()).expect("digits")];
                let crv = u16::from_be_bytes([param(2), param(3)]) & CallReference::MAX;
                q931::setup(&q931::Setup {
                    call_reference: CallReference::from_originator(crv),
                    call_identifier: call,
                    conference_id: call,
                    source: if flags & 2 == 0 { &source } else { &[] },
                    destination: &destination,
                    display: None,
                    endpoint_identifier: caller
                        .phone
                        .endpoint_id
                        .as_ref()
                        .filter(|_| flags & 1 == 0),
                })
                .expect("a Setup of the lab's phones")
            }
            kind => {
                let crv = self.call_reference(at, param(0), param(1), param(2));
                match kind {
                    1 => q931::call_proceeding(crv, call),
                    2 => q931::alerting(crv, call),
                    3 => q931::connect(crv, call, call),
                    4 => {
                        let reason = Release::ALL[usize::from(param(4)) % Release::ALL.len()];
                        q931::release_complete(crv, Some(call), reason)
                    }
                    _ => {
                        let mut writer = MessageWriter::new(crv, MessageType::from_code(param(1)));
                        if p.len() > 2 && writer.user_user(&p[2..]).is_err() {
                            return;
                        }
                        writer.finish()
                    }
                }
            }
        };
        let framed = tpkt::frame(&payload).expect("a message of a few hundred octets");
        self.octets(index, &framed);
    }

    /// The extension phone index `k` names (the seventh: nobody's).
    fn extension(&self, k: u8) -> u32 {
        self.stations
            .get(usize::from(k) % (PHONES.len() + 1))
            .map_or(NOBODY, |s| s.extension)
    }

    /// The call reference op 5 chooses (module doc).
    fn call_reference(&self, at: usize, choice: u8, high: u8, low: u8) -> CallReference {
        let connection = &self.connections[at];
        let latest = |list: &[CallReference]| {
            list.iter()
                .rev()
                .nth(usize::from(choice & 3) % list.len().max(1))
                .copied()
        };
        let explicit = CallReference {
            value: u16::from_be_bytes([high, low]) & CallReference::MAX,
            from_destination: choice & 0x20 != 0,
        };
        if choice & 0x80 != 0 {
            explicit
        } else if choice & 0x40 != 0 {
            latest(&connection.sent).unwrap_or(explicit)
        } else {
            latest(&connection.written).map_or(explicit, CallReference::reversed)
        }
    }

    /// A phone's RAS request (module doc, op 6).
    fn ras(&mut self, who: u8, what: u8, p: &[u8]) {
        let j = usize::from(who) % PHONES.len();
        let param = |i: usize| p.get(i).copied().unwrap_or(0);
        let to = self.stations[j].ras_clan.unwrap_or(self.discovery);
        let datagram = match what % 6 {
            0 => {
                let dialled = self.extension(param(0)).to_string();
                self.stations[j].phone.arq(&dialled, guid(param(1) % 8))
            }
            1 => self.stations[j].phone.drq(guid(param(0) % 8)),
            2 => Some(self.stations[j].phone.urq()),
            3 => {
                self.register(j);
                return;
            }
            4 => self.stations[j].phone.keep_alive(),
            _ => {
                let Some((seq, from)) = self.stations[j].urq.take() else {
                    return;
                };
                let ucf = self.stations[j].phone.ucf(seq);
                let source = self.stations[j].phone.ras_address;
                let out = self.gatekeeper.handle(self.now, from, source, &ucf);
                self.transmits(out);
                self.commands();
                return;
            }
        };
        let Some(datagram) = datagram else {
            return;
        };
        let source = self.stations[j].phone.ras_address;
        let out = self.gatekeeper.handle(self.now, to, source, &datagram);
        self.transmits(out);
        self.commands();
    }

    /// Datagrams the gatekeeper sent: each must decode and leave from one of its addresses;
    /// the phone it goes to reads it. What each phone read.
    fn transmits(&mut self, out: Vec<Transmit>) -> Vec<(SocketAddr, Answer)> {
        let mut answers = Vec::new();
        for transmit in out {
            assert!(
                self.locals.contains(&transmit.local),
                "sent from {}",
                transmit.local
            );
            let answer = match Answer::read(&transmit.payload) {
                Ok(answer) => answer,
                Err(error) => panic!("the gatekeeper sent what does not decode: {error}"),
            };
            if let Some(station) = self
                .stations
                .iter_mut()
                .find(|s| s.phone.ras_address == transmit.to)
            {
                station.phone.learn(&answer);
                if let Answer::Urq { seq, .. } = answer {
                    station.urq = Some((seq, transmit.local));
                }
            }
            answers.push((transmit.to, answer));
        }
        answers
    }

    /// Takes the core's commands and carries them out as the glue would, checking each.
    fn commands(&mut self) {
        for command in self.gatekeeper.take_commands() {
            match command {
                Command::Connect { id, from, to } => {
                    let clan = self
                        .clan_ips
                        .iter()
                        .position(|&ip| ip == from)
                        .unwrap_or_else(|| panic!("{id}: a connect from {from}, no C-LAN's IP"));
                    assert!(
                        self.gatekeeper.clans()[clan].in_service,
                        "{id}: a connect from C-LAN {clan}, out of service"
                    );
                    assert!(
                        self.stations
                            .iter()
                            .any(|s| s.phone.call_signal_address == to),
                        "{id}: a connect to {to}, no phone's call signalling address"
                    );
                    self.learn(id, clan, Glue::Pending);
                }
                Command::Send { id, payload } => {
                    let at = *self
                        .by_id
                        .get(&id)
                        .unwrap_or_else(|| panic!("a Send on {id}, never handed out"));
                    let connection = &self.connections[at];
                    assert!(
                        connection.live(),
                        "a Send on {id}, which is not up: {:?}, closed by the core: {}",
                        connection.glue,
                        connection.closed_by_core
                    );
                    let crv = self.check_frame(id, &payload);
                    self.messages_written += 1;
                    remember(&mut self.connections[at].written, crv);
                }
                Command::Close { id, .. } => {
                    let at = *self
                        .by_id
                        .get(&id)
                        .unwrap_or_else(|| panic!("a Close of {id}, never handed out"));
                    let connection = &mut self.connections[at];
                    assert!(!connection.closed_by_core, "{id} closed twice by the core");
                    assert!(
                        connection.glue != Glue::Gone,
                        "a Close of {id}, which its peer closed already"
                    );
                    connection.closed_by_core = true;
                }
            }
        }
    }

    /// One `Send` payload: a whole TPKT frame holding a Q.931 message — never an empty one,
    /// since no phone of a script asks for the service frame (docs/rules.md §8.4); a Release
    /// Complete of the gatekeeper's own reads with `facts`. The message's call reference.
    fn check_frame(&self, id: ConnectionId, frame: &[u8]) -> CallReference {
        assert!(
            frame.len() >= tpkt::HEADER
                && frame[0] == tpkt::VERSION
                && usize::from(u16::from_be_bytes([frame[2], frame[3]])) == frame.len(),
            "a Send on {id} is not one whole TPKT frame: {frame:02x?}"
        );
        let payload = &frame[tpkt::HEADER..];
        assert!(
            !payload.is_empty(),
            "an empty TPKT frame on {id}, which no phone asked for"
        );
        let message = Message::parse(payload)
            .unwrap_or_else(|e| panic!("a Send on {id} is no Q.931 message ({e}): {payload:02x?}"));
        if message.message_type == MessageType::ReleaseComplete {
            if let Err(error) = q931::facts(payload) {
                let relayed = q931::with_call_reference(payload, CallReference::from_originator(0))
                    .is_ok_and(|moved| self.peer_releases.contains(&moved[..]));
                assert!(
                    relayed,
                    "a Release Complete on {id} that no peer sent does not read ({error}): \
                     {payload:02x?}"
                );
            }
        }
        message.call_reference
    }

    /// The invariants of the state between steps.
    pub fn check(&self) {
        let clans = self.gatekeeper.clans();
        let mut open = vec![0u32; clans.len()];
        let mut pending = vec![0u32; clans.len()];
        for connection in &self.connections {
            if connection.live() {
                open[connection.clan] += 1;
            }
            if connection.glue == Glue::Pending {
                pending[connection.clan] += 1;
            }
        }
        for (idx, clan) in clans.iter().enumerate() {
            let name = &clan.name;
            assert!(
                !clan.in_service || clan.sockets + clan.reserved <= clan.max_sockets,
                "{name} over its cap: {} sockets + {} reserved > {}",
                clan.sockets,
                clan.reserved,
                clan.max_sockets
            );
            assert!(
                clan.established <= clan.sockets,
                "{name}: {} established > {} sockets",
                clan.established,
                clan.sockets
            );
            assert!(
                clan.call_connections <= clan.established,
                "{name}: {} call connections > {} established",
                clan.call_connections,
                clan.established
            );
            assert!(
                clan.setups <= self.max_setups,
                "{name}: {} establishments at once",
                clan.setups
            );
            // What the operating system holds: every connection up is established or in
            // its establishment, every connect in progress (given up on or not) holds a slot.
            assert_eq!(
                open[idx] + pending[idx],
                clan.established + clan.setups,
                "{name}: {} connections up + {} connects pending, but the core counts {} \
                 established + {} establishments",
                open[idx],
                pending[idx],
                clan.established,
                clan.setups
            );
            assert!(
                clan.in_service || open[idx] == 0,
                "{name} is out of service with {} connections up",
                open[idx]
            );
        }
        let calls = self.gatekeeper.routed_calls(self.now);
        let registered = self.gatekeeper.counts().registrations;
        assert!(
            calls.len() <= CALLS_PER_PHONE * registered,
            "{} calls for {registered} phones",
            calls.len()
        );
        for call in &calls {
            for leg in [&call.caller_leg, &call.callee_leg] {
                let clan = clans
                    .iter()
                    .position(|c| c.name == leg.clan)
                    .unwrap_or_else(|| panic!("call {} has a leg on {:?}", call.call, leg.clan));
                assert!(
                    clans[clan].in_service,
                    "call {} has a leg on {}, out of service",
                    call.call, leg.clan
                );
                if let Some(id) = leg.connection {
                    let connection = self
                        .index(id)
                        .map(|at| &self.connections[at])
                        .unwrap_or_else(|| {
                            panic!("call {} is on {id}, never handed out", call.call)
                        });
                    assert!(
                        connection.live(),
                        "call {} is on {id}, which is not up: {:?}, closed by the core: {}",
                        call.call,
                        connection.glue,
                        connection.closed_by_core
                    );
                    assert_eq!(
                        connection.clan, clan,
                        "call {}: {id} is on C-LAN {}, its leg says {}",
                        call.call, connection.clan, leg.clan
                    );
                }
            }
        }
        let stats = self.gatekeeper.call_stats();
        assert!(
            stats.connected <= stats.setups,
            "{} calls answered of {} set up",
            stats.connected,
            stats.setups
        );
        // Every message written is one relayed or one of the gatekeeper's Release
        // Completes, each counted once.
        assert_eq!(
            self.messages_written,
            stats.relayed + stats.released,
            "{} messages written, {} relayed + {} released counted",
            self.messages_written,
            stats.relayed,
            stats.released
        );
    }
}

/// Keeps the latest few call references of a connection.
fn remember(list: &mut Vec<CallReference>, crv: CallReference) {
    if list.len() == 4 {
        list.remove(0);
    }
    list.push(crv);
}

/// The `callIdentifier` of call `n`.
pub fn guid(n: u8) -> [u8; 16] {
    let mut guid = [0x11; 16];
    guid[6] = 0x40;
    guid[15] = n;
    guid
}
