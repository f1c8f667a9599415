//! How the plan's simulated phones behave, as `rasgk storm`'s phones do: GRQ to the
//! discovery address, RRQ at the C-LAN the GCF names, the RAS timer (the same request
//! sent again after `timeout_ms`, doubling, at most 8 s; after `retries` the phone moves
//! on), an RRJ's `altGKInfo` followed, keep-alives (lightweight RRQ) every half TTL,
//! re-registration through the AGL of a gatekeeper-sent URQ, and in socket mode a socket
//! at the C-LAN: a non-TTS phone connects after its RCF and, turned away, comes back after
//! a back-off of 50 ms doubling to 2 s; a TTS phone takes the gatekeeper's connection.
//!
//! With routed calls ([`calls`](super::calls)) they call one another through the relay and
//! answer the Setups that reach them.
//!
//! Two things the storm never meets, modelled as Avaya's phones behave
//! (docs/rules.md §16): a phone that loses its registration without being told (a
//! keep-alive rejected or unanswered) registers again through the AGL its last RCF gave,
//! entry by entry, and only then with a GRQ; and a phone whose socket the gatekeeper
//! closes without a URQ checks its registration at once with a lightweight RRQ.

use std::net::SocketAddr;
use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{micros, Micros, PhoneTimer, What, World};
use crate::gatekeeper::ConnectionId;
use crate::phone::{Answer, Phone};
use crate::phone_timing::Backoff;

/// The RAS timer's longest wait.
const MOST_WAIT: Micros = 8_000_000;

/// A phone whose request slot is busy tries a keep-alive or a call again this much later.
const BUSY_AGAIN: Micros = 1_000_000;

/// A phone's signalling socket, as the phone sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::plan) enum Socket {
    /// None (unregistered, or a TTS phone waiting for the gatekeeper's connection).
    None,
    /// A non-TTS phone is connecting (or waiting to try again).
    Connecting,
    /// Connected, waiting for the service frame.
    Open(ConnectionId),
    /// In service.
    InService(ConnectionId),
}

/// What a phone's outstanding request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Grq,
    Rrq,
    KeepAlive,
    /// A lightweight RRQ checking the registration after the socket closed.
    Check,
    Arq([u8; 16]),
    Drq,
}

/// The request a phone waits for an answer to.
#[derive(Debug, Clone)]
struct Request {
    kind: Kind,
    to: SocketAddr,
    /// Shared with the datagrams in flight.
    datagram: Rc<[u8]>,
    seq: u16,
    attempt: u32,
}

/// The last RCF a phone read in full, while reading it again would change nothing: its
/// keep-alives are answered with the same octets but for the sequence number (about all
/// of a long plan's traffic), and those are then taken without reading them again.
#[derive(Debug, Default)]
struct HeardRcf {
    octets: Vec<u8>,
    /// Where its `requestSeqNum` sits.
    seq_at: usize,
    time_to_live_s: Option<u32>,
}

impl HeardRcf {
    /// The sequence number of `datagram` when it is this RCF with another sequence number.
    fn again(&self, datagram: &[u8]) -> Option<u16> {
        let (at, old) = (self.seq_at, &self.octets);
        if datagram.len() != old.len()
            || datagram[..at] != old[..at]
            || datagram[at + 2..] != old[at + 2..]
        {
            return None;
        }
        u16::from_be_bytes([datagram[at], datagram[at + 1]]).checked_add(1)
    }
}

/// One simulated phone.
pub(in crate::plan) struct SimPhone {
    pub phone: Phone,
    pub group: u16,
    pub tts: bool,
    pub extension: u32,
    pub arrived: bool,
    pub registered: bool,
    /// The C-LAN's RAS address it is registered at.
    pub clan: Option<SocketAddr>,
    /// Its RCF's `callSignalAddress`: the C-LAN's listener.
    pub call_signal_address: Option<SocketAddr>,
    /// The AGL its last RCF gave.
    agl: Vec<SocketAddr>,
    /// AGL entries still to try in this registration, first first.
    next: Vec<SocketAddr>,
    ttl_s: u32,
    request: Option<Request>,
    /// This registration's keep-alive, written once: the next ones differ only in their
    /// sequence number, written into it.
    keep_alive: Option<Vec<u8>>,
    pub socket: Socket,
    backoff: Backoff,
    rng: ChaCha8Rng,
    /// When its last RCF came, until its socket is in service.
    rcf_at: Option<Micros>,
    pub in_service: bool,
    /// The event after which it lost service, until it is back.
    lost_after: Option<usize>,
    /// The call it was admitted for and has not disengaged yet.
    pub call: Option<[u8; 16]>,
    /// The call reference of its last routed call's Setup.
    pub crv: u16,
    /// The event after which it lost a routed call before hanging up, until one of its
    /// routed calls is answered again.
    pub cut_after: Option<usize>,
    /// The RCF it learnt from last, unless it learnt from another answer since.
    heard_rcf: Option<HeardRcf>,
}

impl SimPhone {
    pub fn new(phone: Phone, group: u16, tts: bool, extension: u32, seed: u64) -> SimPhone {
        SimPhone {
            phone,
            group,
            tts,
            extension,
            arrived: false,
            registered: false,
            clan: None,
            call_signal_address: None,
            agl: Vec::new(),
            next: Vec::new(),
            ttl_s: 300,
            request: None,
            keep_alive: None,
            socket: Socket::None,
            backoff: Backoff::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            rcf_at: None,
            in_service: false,
            lost_after: None,
            call: None,
            crv: 0,
            cut_after: None,
            heard_rcf: None,
        }
    }

    /// A keep-alive (a new sequence number): the octets of this registration's first one
    /// with the number written in.
    fn keep_alive_octets(&mut self) -> Option<Rc<[u8]>> {
        if let Some(octets) = &mut self.keep_alive {
            let seq = self.phone.next_seq();
            if crate::ras::set_request_seq_num(octets, seq).is_some() {
                return Some(Rc::from(&octets[..]));
            }
        }
        let octets = self.phone.keep_alive()?;
        let shared = Rc::from(&octets[..]);
        self.keep_alive = Some(octets);
        Some(shared)
    }

    /// Learns from `answer`, read from `datagram`, and keeps the datagram when it is an RCF:
    /// the same RCF again teaches nothing more.
    fn learn(&mut self, answer: &Answer, datagram: &[u8]) {
        self.phone.learn(answer);
        let kept = match answer {
            Answer::Rcf { time_to_live_s, .. } => {
                crate::ras::request_seq_num_octet(datagram).map(|seq_at| (seq_at, *time_to_live_s))
            }
            _ => None,
        };
        match kept {
            Some((seq_at, time_to_live_s)) => {
                let heard = self.heard_rcf.get_or_insert_with(HeardRcf::default);
                heard.octets.clear();
                heard.octets.extend_from_slice(datagram);
                heard.seq_at = seq_at;
                heard.time_to_live_s = time_to_live_s;
            }
            None => self.heard_rcf = None,
        }
    }
}

impl World<'_> {
    fn p(&mut self, phone: u32) -> &mut SimPhone {
        &mut self.phones[phone as usize]
    }

    /// A phone arrives.
    pub(in crate::plan) fn arrive(&mut self, phone: u32) {
        self.p(phone).arrived = true;
        self.register_next(phone);
    }

    /// The next step of registering: an RRQ at the next AGL entry, or a GRQ.
    fn register_next(&mut self, phone: u32) {
        let p = self.p(phone);
        if p.next.is_empty() {
            let datagram = p.phone.grq();
            let to = self.discovery;
            self.send(phone, Kind::Grq, to, datagram);
        } else {
            let to = p.next.remove(0);
            let datagram = p.phone.rrq();
            self.send(phone, Kind::Rrq, to, datagram);
        }
    }

    /// Sends a request and arms its RAS timer.
    fn send(&mut self, phone: u32, kind: Kind, to: SocketAddr, datagram: impl Into<Rc<[u8]>>) {
        let datagram = datagram.into();
        let p = self.p(phone);
        let seq = p.phone.last_seq();
        p.request = Some(Request {
            kind,
            to,
            datagram: datagram.clone(),
            seq,
            attempt: 0,
        });
        self.send_to_gatekeeper(phone, to, datagram);
        let at = self.now + self.wait(0);
        self.arm(phone, PhoneTimer::Request, at);
    }

    /// The RAS timer's wait before attempt `attempt + 1`.
    fn wait(&self, attempt: u32) -> Micros {
        let timeout = self.scenario.timeout_ms * 1000;
        (timeout << attempt.min(6)).min(MOST_WAIT).max(timeout)
    }

    /// One of a phone's timers went off.
    pub(in crate::plan) fn timer(&mut self, phone: u32, timer: PhoneTimer) {
        match timer {
            PhoneTimer::Request => self.request_timed_out(phone),
            PhoneTimer::Retry => {
                if !self.p(phone).registered && self.p(phone).request.is_none() {
                    self.register_next(phone);
                }
            }
            PhoneTimer::KeepAlive => self.keep_alive(phone),
            PhoneTimer::Connect => self.connect(phone),
            PhoneTimer::Call => self.call(phone),
        }
    }

    fn request_timed_out(&mut self, phone: u32) {
        let retries = self.scenario.retries;
        let Some(request) = self.p(phone).request.as_mut() else {
            return;
        };
        if request.attempt < retries {
            request.attempt += 1;
            let (to, datagram, attempt) = (request.to, request.datagram.clone(), request.attempt);
            self.tally.retransmissions += 1;
            self.send_to_gatekeeper(phone, to, datagram);
            let at = self.now + self.wait(attempt);
            self.arm(phone, PhoneTimer::Request, at);
            return;
        }
        let kind = request.kind;
        self.p(phone).request = None;
        match kind {
            Kind::Grq | Kind::Rrq => self.register_next(phone),
            Kind::KeepAlive | Kind::Check => self.recover(phone),
            Kind::Arq(_) | Kind::Drq => self.next_call(phone),
        }
    }

    /// A datagram from the gatekeeper.
    pub(in crate::plan) fn heard(&mut self, phone: u32, datagram: &[u8]) {
        if self.heard_again(phone, datagram) {
            return;
        }
        let Ok(answer) = Answer::read(datagram) else {
            return;
        };
        if let Answer::Urq { seq, agl, .. } = &answer {
            self.tally.urqs += 1;
            let discovery = self.discovery;
            let p = self.p(phone);
            let ucf = p.phone.ucf(*seq);
            let to = p.clan.unwrap_or(discovery);
            p.learn(&answer, datagram);
            self.send_to_gatekeeper(phone, to, ucf.into());
            if self.p(phone).registered || self.p(phone).request.is_some() {
                self.unregistered(phone);
                self.p(phone).next = agl.clone();
                self.register_next(phone);
            }
            return;
        }
        let p = self.p(phone);
        let Some(request) = p.request.as_ref().filter(|r| r.seq == answer.seq()) else {
            return; // a late answer to an earlier request
        };
        let kind = request.kind;
        let to = request.to;
        p.request = None;
        p.learn(&answer, datagram);
        self.disarm(phone, PhoneTimer::Request);
        match (kind, answer) {
            (
                Kind::Grq,
                Answer::Gcf {
                    ras_address: Some(clan),
                    ..
                },
            ) => {
                let datagram = self.p(phone).phone.rrq();
                self.send(phone, Kind::Rrq, clan, datagram);
            }
            (Kind::Grq, Answer::Grj { reason, .. }) => {
                self.tally.reject(format!("GRJ {reason}"));
                let at = self.now + self.scenario.timeout_ms * 1000;
                self.arm(phone, PhoneTimer::Retry, at);
            }
            (
                Kind::Rrq,
                Answer::Rcf {
                    call_signal_address,
                    agl,
                    time_to_live_s,
                    ..
                },
            ) => self.registered(phone, to, call_signal_address, agl, time_to_live_s),
            (
                Kind::Rrq,
                Answer::Rrj {
                    reason, alternates, ..
                },
            ) => {
                self.tally.reject(format!("RRJ {reason}"));
                if alternates.is_empty() {
                    // Nowhere else to try: start again after the RAS timer, as after a GRJ.
                    self.p(phone).next.clear();
                    let at = self.now + self.scenario.timeout_ms * 1000;
                    self.arm(phone, PhoneTimer::Retry, at);
                } else {
                    self.p(phone).next = alternates;
                    self.register_next(phone);
                }
            }
            (Kind::KeepAlive | Kind::Check, Answer::Rcf { time_to_live_s, .. }) => {
                self.still_registered(phone, kind, time_to_live_s);
            }
            (Kind::KeepAlive | Kind::Check, Answer::Rrj { reason, .. }) => {
                self.tally.reject(format!("RRJ {reason}"));
                self.recover(phone);
            }
            (Kind::Arq(call), Answer::Acf { routed, .. }) => {
                self.tally.calls += 1;
                let scenario = self.scenario;
                let p = self.p(phone);
                p.call = Some(call);
                let hold = micros(scenario.groups[p.group as usize].call_hold_s);
                self.arm(phone, PhoneTimer::Call, self.now + hold);
                self.admitted(phone, call, routed);
            }
            (Kind::Arq(_), Answer::Arj { reason, .. }) => {
                self.tally.reject(format!("ARJ {reason}"));
                self.next_call(phone);
            }
            (Kind::Drq, _) => self.next_call(phone),
            (Kind::Grq | Kind::Rrq, _) => self.register_next(phone),
            _ => {}
        }
    }

    /// The RCF its keep-alive or check got once already, with this request's sequence
    /// number: taken as [`heard`](World::heard) would take it, without reading it again
    /// (what the phone learns from it, it learnt the first time). `false`: not such a
    /// datagram, to be read.
    fn heard_again(&mut self, phone: u32, datagram: &[u8]) -> bool {
        let p = self.p(phone);
        let Some(heard) = &p.heard_rcf else {
            return false;
        };
        let Some(seq) = heard.again(datagram) else {
            return false;
        };
        let time_to_live_s = heard.time_to_live_s;
        let Some(request) = &p.request else {
            return true; // a late answer to an earlier request
        };
        if request.seq != seq {
            return true;
        }
        let kind = request.kind;
        if !matches!(kind, Kind::KeepAlive | Kind::Check) {
            return false;
        }
        p.request = None;
        self.disarm(phone, PhoneTimer::Request);
        self.still_registered(phone, kind, time_to_live_s);
        true
    }

    /// An RCF answered its keep-alive or check: the next keep-alive, and after a check with
    /// no socket, a connection.
    fn still_registered(&mut self, phone: u32, kind: Kind, time_to_live_s: Option<u32>) {
        let p = self.p(phone);
        p.ttl_s = time_to_live_s.unwrap_or(p.ttl_s);
        self.arm_keep_alive(phone);
        let p = self.p(phone);
        if kind == Kind::Check && !p.tts && p.socket == Socket::None {
            p.socket = Socket::Connecting;
            let wait = micros(p.backoff.next(&mut p.rng).as_secs_f64());
            self.arm(phone, PhoneTimer::Connect, self.now + wait);
        }
    }

    /// An RCF from the C-LAN at `clan`.
    fn registered(
        &mut self,
        phone: u32,
        clan: SocketAddr,
        call_signal_address: Option<SocketAddr>,
        agl: Vec<SocketAddr>,
        time_to_live_s: Option<u32>,
    ) {
        let now = self.now;
        let p = self.p(phone);
        p.registered = true;
        p.clan = Some(clan);
        p.call_signal_address = call_signal_address;
        if !agl.is_empty() {
            p.agl = agl;
        }
        p.next.clear();
        p.ttl_s = time_to_live_s.unwrap_or(p.ttl_s);
        p.rcf_at = Some(now);
        p.keep_alive = None;
        p.backoff = Backoff::default();
        let connect = !p.tts;
        self.arm_keep_alive(phone);
        if connect {
            self.p(phone).socket = Socket::Connecting;
            self.connect(phone);
        }
        self.next_call(phone);
    }

    fn arm_keep_alive(&mut self, phone: u32) {
        let half_ttl = u64::from(self.p(phone).ttl_s) * 500_000;
        self.arm(phone, PhoneTimer::KeepAlive, self.now + half_ttl.max(1));
    }

    fn keep_alive(&mut self, phone: u32) {
        let p = self.p(phone);
        if !p.registered {
            return;
        }
        if p.request.is_some() {
            self.arm(phone, PhoneTimer::KeepAlive, self.now + BUSY_AGAIN);
            return;
        }
        let (Some(clan), Some(datagram)) = (p.clan, p.keep_alive_octets()) else {
            return;
        };
        self.send(phone, Kind::KeepAlive, clan, datagram);
    }

    /// Its registration is gone (a URQ came, or it found out): no socket, no call, no
    /// keep-alives.
    fn unregistered(&mut self, phone: u32) {
        self.cut(phone, true);
        let p = self.p(phone);
        p.registered = false;
        p.request = None;
        p.keep_alive = None;
        p.call = None;
        p.socket = Socket::None;
        p.rcf_at = None;
        self.service_lost(phone);
        for timer in [
            PhoneTimer::Request,
            PhoneTimer::Retry,
            PhoneTimer::KeepAlive,
            PhoneTimer::Connect,
            PhoneTimer::Call,
        ] {
            self.disarm(phone, timer);
        }
    }

    /// Lost without being told: through the last AGL, then GRQ.
    fn recover(&mut self, phone: u32) {
        self.unregistered(phone);
        let p = self.p(phone);
        p.next = p.agl.clone();
        self.register_next(phone);
    }

    /// A non-TTS phone's connection request leaves for its C-LAN.
    fn connect(&mut self, phone: u32) {
        let p = self.p(phone);
        if !p.registered || p.socket != Socket::Connecting {
            return;
        }
        let generation = self.generation(phone, PhoneTimer::Connect);
        self.at(self.now + self.latency, What::Syn { phone, generation });
    }

    /// The C-LAN reset the phone's connection: it tries again after a back-off.
    pub(in crate::plan) fn reset(&mut self, phone: u32, generation: u32) {
        if self.generation(phone, PhoneTimer::Connect) != generation {
            return;
        }
        let p = self.p(phone);
        if !p.registered {
            return;
        }
        if !matches!(p.socket, Socket::Connecting | Socket::Open(_)) {
            return;
        }
        p.socket = Socket::Connecting;
        let wait = micros(p.backoff.next(&mut p.rng).as_secs_f64());
        self.arm(phone, PhoneTimer::Connect, self.now + wait);
    }

    /// The service frame came on connection `id`.
    pub(in crate::plan) fn in_service(&mut self, phone: u32, id: ConnectionId) {
        let now = self.now;
        let p = self.p(phone);
        if p.socket != Socket::Open(id) {
            return;
        }
        p.socket = Socket::InService(id);
        p.in_service = true;
        p.backoff = Backoff::default();
        let tts = p.tts;
        if let Some(rcf_at) = p.rcf_at.take() {
            let took = now - rcf_at;
            if tts {
                self.tally.service_tts_us.push(took);
            } else {
                self.tally.service_other_us.push(took);
            }
        }
        if let Some(event) = self.p(phone).lost_after.take() {
            let back = now - micros(self.scenario.events[event].at_s);
            self.tally.events[event].back_after_us.push(back);
        }
    }

    /// A Setup came first on connection `id` the gatekeeper opened for a call (no service
    /// frame): the phone takes it as its socket, in service, without a time to service (no
    /// socket it was set up with).
    pub(in crate::plan) fn taken_for_call(&mut self, phone: u32, id: ConnectionId) {
        let p = self.p(phone);
        p.rcf_at = None;
        self.in_service(phone, id);
    }

    /// The phone is out of service now (if it was in service).
    fn service_lost(&mut self, phone: u32) {
        let current = self.current_event;
        let p = self.p(phone);
        if !p.in_service {
            return;
        }
        p.in_service = false;
        if let Some(event) = current {
            if p.lost_after != Some(event) {
                p.lost_after = Some(event);
                self.tally.events[event].lost += 1;
            }
        }
    }

    /// The gatekeeper closed connection `id` of the phone.
    pub(in crate::plan) fn socket_closed(&mut self, phone: u32, id: ConnectionId) {
        let p = self.p(phone);
        if !matches!(p.socket, Socket::Open(open) | Socket::InService(open) if open == id) {
            return;
        }
        self.socket_lost_call(phone, id);
        let p = self.p(phone);
        p.socket = Socket::None;
        self.service_lost(phone);
        let p = self.p(phone);
        if p.registered && p.request.is_none() {
            if let (Some(clan), Some(datagram)) = (p.clan, p.keep_alive_octets()) {
                self.send(phone, Kind::Check, clan, datagram);
            }
        }
    }

    /// Arms the phone's next call, when its group places calls.
    fn next_call(&mut self, phone: u32) {
        let scenario = self.scenario;
        let p = self.p(phone);
        let per_hour = scenario.groups[p.group as usize].calls_per_hour;
        if per_hour <= 0.0 || !p.registered {
            return;
        }
        // Exponential gaps: calls at random, `per_hour` an hour on average.
        let u: f64 = p.rng.random::<f64>();
        let gap = -(1.0 - u).ln() * 3600.0 / per_hour;
        self.arm(phone, PhoneTimer::Call, self.now + micros(gap));
    }

    /// Time to place a call, or to end the one in progress.
    fn call(&mut self, phone: u32) {
        let p = self.p(phone);
        if !p.registered {
            return;
        }
        if p.request.is_some() {
            self.arm(phone, PhoneTimer::Call, self.now + BUSY_AGAIN);
            return;
        }
        let Some(clan) = p.clan else {
            return;
        };
        match p.call {
            Some(call) => {
                self.hang_up(phone);
                let p = self.p(phone);
                p.call = None;
                if let Some(datagram) = p.phone.drq(call) {
                    self.send(phone, Kind::Drq, clan, datagram);
                }
            }
            None => {
                let dial = self.dialled(phone);
                let p = self.p(phone);
                let mut call = [0u8; 16];
                p.rng.fill(&mut call);
                if let Some(datagram) = p.phone.arq(&dial, call) {
                    self.send(phone, Kind::Arq(call), clan, datagram);
                }
            }
        }
    }
}
