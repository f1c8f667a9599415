//! A simulated phone's RAS behaviour, with no I/O: it discovers its gatekeeper, registers,
//! keeps its registration alive, retransmits an unanswered request, answers a
//! gatekeeper-sent URQ and IRQ, walks its AGL when it loses its C-LAN and follows an
//! alternate gatekeeper an RRJ names — as a standard H.323 endpoint does. It is what an
//! exam examines when no real endpoint is at hand, in virtual time (tests) or over a real
//! socket (`rasgk exam --simulate`).
//!
//! Each [`Misbehaviour`] turns one of those off or wrong, so that every check of an exam
//! has a phone that fails it. Datagrams go in with `now` ([`SimulatedPhone::receive`]);
//! what the phone sends comes out as [`Outgoing`] values; its timers fire in
//! [`SimulatedPhone::tick`] at [`SimulatedPhone::deadline`].

mod calls;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::phone::{Answer, Phone};

pub use calls::{CallEvent, CallNote, Connection, Failure, Signal, DECLINE_AFTER, HOLD, MAX_CALLS};

/// How long a request waits for its answer before it is sent again. H.225.0's default RAS
/// timeout is longer (a few seconds); a short one keeps an exam short, and nothing in the
/// gatekeeper depends on it.
pub const RETRY_AFTER: Duration = Duration::from_millis(1500);

/// How often a request is sent in all before the phone gives its gatekeeper up.
pub const ATTEMPTS: u32 = 3;

/// A keep-alive goes out this share of the time to live after the registration or the
/// last keep-alive (H323Plus sends its keep-alive a little before the time to live; half
/// leaves room for a retransmission).
const KEEP_ALIVE_AT: f64 = 0.5;

/// Something a simulated phone does wrong, on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Misbehaviour {
    /// A gatekeeper-sent URQ gets no UCF, and the phone goes on as if registered.
    IgnoresUrq,
    /// No keep-alive RRQ, ever.
    NeverKeepsAlive,
    /// Having lost its C-LAN, it starts again at the discovery address instead of walking
    /// its AGL.
    RediscoversOnLoss,
    /// A request sent again gets a new `requestSeqNum`, so that it is a new request.
    NewSeqOnRetransmit,
    /// It walks its AGL from the last entry instead of the first.
    SkipsAglOrder,
    /// A gatekeeper-sent IRQ gets no IRR.
    IgnoresIrq,
    /// A TTS phone that closes the socket the gatekeeper opened to it.
    DeclinesTts,
    /// A call released sends no DRQ.
    NoDrq,
}

impl Misbehaviour {
    /// Every misbehaviour.
    pub const ALL: [Misbehaviour; 8] = [
        Misbehaviour::IgnoresUrq,
        Misbehaviour::NeverKeepsAlive,
        Misbehaviour::RediscoversOnLoss,
        Misbehaviour::NewSeqOnRetransmit,
        Misbehaviour::SkipsAglOrder,
        Misbehaviour::IgnoresIrq,
        Misbehaviour::DeclinesTts,
        Misbehaviour::NoDrq,
    ];

    /// Its name on the command line (`--misbehave ignores-urq`).
    pub fn name(self) -> &'static str {
        match self {
            Misbehaviour::IgnoresUrq => "ignores-urq",
            Misbehaviour::NeverKeepsAlive => "never-keeps-alive",
            Misbehaviour::RediscoversOnLoss => "rediscovers-on-loss",
            Misbehaviour::NewSeqOnRetransmit => "new-seq-on-retransmit",
            Misbehaviour::SkipsAglOrder => "skips-agl-order",
            Misbehaviour::IgnoresIrq => "ignores-irq",
            Misbehaviour::DeclinesTts => "declines-tts",
            Misbehaviour::NoDrq => "no-drq",
        }
    }

    /// The misbehaviour of a name.
    pub fn from_name(name: &str) -> Option<Misbehaviour> {
        Misbehaviour::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A datagram the phone sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Where to.
    pub to: SocketAddr,
    /// The octets.
    pub datagram: Vec<u8>,
}

/// What a request in flight is, so that it can be sent again or given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asking {
    Grq,
    FullRrq,
    KeepAlive,
    Arq { answer: bool },
    Drq,
}

#[derive(Debug, Clone)]
struct InFlight {
    asking: Asking,
    to: SocketAddr,
    datagram: Vec<u8>,
    seq: u16,
    attempts: u32,
    retry_at: Instant,
    /// The call an ARQ or DRQ is about.
    call: Option<[u8; 16]>,
}

/// One simulated phone.
#[derive(Debug, Clone)]
pub struct SimulatedPhone {
    /// Its RAS side: the messages it writes.
    pub phone: Phone,
    discovery: SocketAddr,
    misbehaviours: Vec<Misbehaviour>,
    /// Where it is registered, or registering.
    gatekeeper: Option<SocketAddr>,
    registered: bool,
    /// The AGL its last RCF or URQ gave, in order.
    agl: Vec<SocketAddr>,
    /// Where it went last while walking its AGL.
    walked: usize,
    time_to_live: Option<Duration>,
    keep_alive_at: Option<Instant>,
    /// The registration's request in flight (GRQ, RRQ).
    in_flight: Option<InFlight>,
    /// The calls' requests in flight (ARQ, DRQ), beside it.
    call_requests: Vec<InFlight>,
    calls: calls::Calls,
    registrations: u32,
    /// How long it holds a call it placed after the Connect.
    pub hold: Duration,
    /// How long it holds a call it answered before releasing it itself; `None`: until the
    /// caller releases it.
    pub answered_hold: Option<Duration>,
    /// A call it placed not connected this long after its Setup is given up.
    pub connect_within: Duration,
    /// The most calls it takes part in at once (it holds twice as many connections).
    pub max_calls: usize,
    /// Its keep-alive goes out this share of the time to live after the last (the exam's
    /// phone keeps alive more often, so that it learns of a gatekeeper restart soon).
    pub keep_alive_share: f64,
}

impl SimulatedPhone {
    /// A phone that will look for its gatekeeper at `discovery`.
    pub fn new(phone: Phone, discovery: SocketAddr, misbehaviours: &[Misbehaviour]) -> Self {
        SimulatedPhone {
            phone,
            discovery,
            misbehaviours: misbehaviours.to_vec(),
            gatekeeper: None,
            registered: false,
            agl: Vec::new(),
            walked: 0,
            time_to_live: None,
            keep_alive_at: None,
            in_flight: None,
            call_requests: Vec::new(),
            calls: calls::Calls::default(),
            registrations: 0,
            hold: HOLD,
            answered_hold: None,
            connect_within: crate::phone_timing::NO_CONNECT,
            keep_alive_share: KEEP_ALIVE_AT,
            max_calls: MAX_CALLS,
        }
    }

    fn does(&self, misbehaviour: Misbehaviour) -> bool {
        self.misbehaviours.contains(&misbehaviour)
    }

    /// Its misbehaviours.
    pub fn misbehaviours(&self) -> &[Misbehaviour] {
        &self.misbehaviours
    }

    /// It believes itself registered.
    pub fn registered(&self) -> bool {
        self.registered
    }

    /// The RAS address it is registered at (or registering at).
    pub fn gatekeeper(&self) -> Option<SocketAddr> {
        self.gatekeeper
    }

    /// How many RCFs to full RRQs it has had.
    pub fn registrations(&self) -> u32 {
        self.registrations
    }

    /// Starts: a GRQ to the discovery address.
    pub fn start(&mut self, now: Instant) -> Vec<Outgoing> {
        self.discover(now)
    }

    /// When [`tick`](Self::tick) next has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        let declines = self.does(Misbehaviour::DeclinesTts);
        self.in_flight
            .iter()
            .chain(&self.call_requests)
            .map(|f| f.retry_at)
            .chain(self.keep_alive_at)
            .chain(self.calls.deadline(declines))
            .min()
    }

    /// Timers: a request sent again or given up; a keep-alive due; a call released or
    /// given up.
    pub fn tick(&mut self, now: Instant) -> Vec<Outgoing> {
        let mut out = Vec::new();
        if let Some(flight) = self.in_flight.take() {
            self.in_flight = self.due(now, flight, &mut out);
        }
        for flight in std::mem::take(&mut self.call_requests) {
            if let Some(flight) = self.due(now, flight, &mut out) {
                self.call_requests.push(flight);
            }
        }
        if self.keep_alive_at.is_some_and(|at| at <= now) {
            self.keep_alive_at = None;
            if self.in_flight.is_none() {
                if let Some(to) = self.gatekeeper.filter(|_| self.registered) {
                    out.extend(self.ask(now, Asking::KeepAlive, to));
                }
            }
        }
        out.extend(self.call_timers(now));
        out
    }

    /// A request in flight at `now`: still waiting, sent again (to `out`), or given up
    /// (what follows to `out`). It, while it is still in flight.
    fn due(&mut self, now: Instant, flight: InFlight, out: &mut Vec<Outgoing>) -> Option<InFlight> {
        if flight.retry_at > now {
            return Some(flight);
        }
        if flight.attempts >= ATTEMPTS {
            out.extend(self.given_up(now, &flight));
            return None;
        }
        let flight = self.again(now, flight);
        out.push(Outgoing {
            to: flight.to,
            datagram: flight.datagram.clone(),
        });
        Some(flight)
    }

    /// A request sent again: the same datagram, or (a phone that misbehaves so) a new one
    /// with a new sequence number.
    fn again(&mut self, now: Instant, mut flight: InFlight) -> InFlight {
        flight.attempts += 1;
        flight.retry_at = now + RETRY_AFTER;
        if self.does(Misbehaviour::NewSeqOnRetransmit) {
            if let Some(datagram) = self.write(flight.asking, flight.call) {
                flight.seq = self.phone.last_seq();
                flight.datagram = datagram;
            }
        }
        flight
    }

    /// A datagram from the gatekeeper at `from`.
    pub fn receive(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) -> Vec<Outgoing> {
        let Ok(answer) = Answer::read(datagram) else {
            return Vec::new();
        };
        match &answer {
            Answer::Urq { seq, agl, .. } => return self.urq(now, from, *seq, agl.clone()),
            Answer::Irq { seq } => {
                if self.does(Misbehaviour::IgnoresIrq) {
                    return Vec::new();
                }
                return self
                    .phone
                    .irr(*seq)
                    .map(|datagram| Outgoing { to: from, datagram })
                    .into_iter()
                    .collect();
            }
            _ => {}
        }
        // An answer to what is in flight, or to nothing (late, or a retransmission's).
        if let Some(i) = self
            .call_requests
            .iter()
            .position(|f| f.seq == answer.seq())
        {
            let flight = self.call_requests.remove(i);
            let Some(call_id) = flight.call else {
                return Vec::new();
            };
            return match answer {
                Answer::Acf { dest, routed, .. } => {
                    self.admission(now, call_id, Ok((dest, routed)))
                }
                Answer::Arj { reason, .. } => {
                    self.admission(now, call_id, Err(Failure::Refused(reason)))
                }
                _ => Vec::new(),
            };
        }
        let Some(flight) = self
            .in_flight
            .as_ref()
            .filter(|f| f.seq == answer.seq())
            .cloned()
        else {
            return Vec::new();
        };
        self.in_flight = None;
        self.phone.learn(&answer);
        match answer {
            Answer::Gcf { ras_address, .. } => {
                let to = ras_address.unwrap_or(from);
                self.ask(now, Asking::FullRrq, to)
            }
            Answer::Grj { .. } => self.later_again(now),
            Answer::Rcf {
                agl,
                time_to_live_s,
                ..
            } => {
                self.registered = true;
                self.gatekeeper = Some(flight.to);
                let mut out = Vec::new();
                if flight.asking == Asking::FullRrq {
                    self.registrations += 1;
                    self.agl = agl;
                    self.walked = 0;
                    out.extend(self.redial(now));
                }
                if let Some(ttl) = time_to_live_s {
                    self.time_to_live = Some(Duration::from_secs(u64::from(ttl)));
                }
                self.arm_keep_alive(now);
                out
            }
            Answer::Rrj {
                reason, alternates, ..
            } => {
                self.registered = false;
                self.keep_alive_at = None;
                if let Some(&alternate) = alternates.first() {
                    return self.ask(now, Asking::FullRrq, alternate);
                }
                if reason == "fullRegistrationRequired" {
                    return self.ask(now, Asking::FullRrq, flight.to);
                }
                self.lost(now)
            }
            _ => Vec::new(),
        }
    }

    /// A gatekeeper-sent URQ of `seq` from `from`, with the AGL to go to.
    fn urq(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u16,
        agl: Vec<SocketAddr>,
    ) -> Vec<Outgoing> {
        if self.does(Misbehaviour::IgnoresUrq) {
            return Vec::new();
        }
        let mut out = vec![Outgoing {
            to: from,
            datagram: self.phone.ucf(seq),
        }];
        self.phone.learn(&Answer::Urq {
            seq,
            agl: agl.clone(),
            endpoint_id: None,
        });
        self.registered = false;
        self.keep_alive_at = None;
        self.in_flight = None;
        self.call_requests.clear();
        if agl.is_empty() {
            // Unregistered by an administrator: register again where it was.
            out.extend(self.ask(now, Asking::FullRrq, from));
        } else {
            self.agl = agl;
            self.walked = 0;
            out.extend(self.walk(now, true));
        }
        out
    }

    /// Its gatekeeper is gone: on to the next entry of its AGL, or discovery again.
    fn lost(&mut self, now: Instant) -> Vec<Outgoing> {
        self.registered = false;
        self.keep_alive_at = None;
        self.walk(now, false)
    }

    /// The next entry of the AGL (from the first with `from_start`) other than the address
    /// it just lost, or discovery when there is none left or the phone rediscovers.
    fn walk(&mut self, now: Instant, from_start: bool) -> Vec<Outgoing> {
        if self.does(Misbehaviour::RediscoversOnLoss) || self.agl.is_empty() {
            return self.discover(now);
        }
        if from_start {
            self.walked = 0;
        }
        let lost = self.gatekeeper;
        let mut order: Vec<SocketAddr> = self.agl.clone();
        if self.does(Misbehaviour::SkipsAglOrder) {
            order.reverse();
        }
        while self.walked < order.len() {
            let to = order[self.walked];
            self.walked += 1;
            if Some(to) != lost || from_start {
                return self.ask(now, Asking::FullRrq, to);
            }
        }
        self.walked = 0;
        self.discover(now)
    }

    fn discover(&mut self, now: Instant) -> Vec<Outgoing> {
        self.registered = false;
        self.keep_alive_at = None;
        self.ask(now, Asking::Grq, self.discovery)
    }

    /// A GRJ: discovery again a little later (the next tick after a retry's wait).
    fn later_again(&mut self, now: Instant) -> Vec<Outgoing> {
        self.discover(now)
    }

    fn given_up(&mut self, now: Instant, flight: &InFlight) -> Vec<Outgoing> {
        match flight.asking {
            Asking::Grq => self.discover(now),
            Asking::FullRrq | Asking::KeepAlive => self.lost(now),
            Asking::Arq { .. } => match flight.call {
                Some(call_id) => self.admission(now, call_id, Err(Failure::Unanswered(flight.seq))),
                None => Vec::new(),
            },
            Asking::Drq => Vec::new(),
        }
    }

    fn arm_keep_alive(&mut self, now: Instant) {
        if self.does(Misbehaviour::NeverKeepsAlive) {
            return;
        }
        if let Some(ttl) = self.time_to_live {
            self.keep_alive_at = Some(now + ttl.mul_f64(self.keep_alive_share.clamp(0.05, 0.9)));
        }
    }

    /// Writes a request of `asking` (a new sequence number); `call` for ARQ and DRQ.
    fn write(&mut self, asking: Asking, call: Option<[u8; 16]>) -> Option<Vec<u8>> {
        match asking {
            Asking::Grq => Some(self.phone.grq()),
            Asking::FullRrq => Some(self.phone.rrq()),
            Asking::KeepAlive => self.phone.keep_alive(),
            Asking::Arq { answer: true } => self.phone.answer_arq(call?),
            Asking::Arq { answer: false } => {
                let call_id = call?;
                let leg = self.calls.legs.iter().find(|l| l.call_id == call_id)?;
                let dialled = leg.dialled.clone();
                self.phone.arq(&dialled, call_id)
            }
            Asking::Drq => self.phone.drq(call?),
        }
    }

    fn ask(&mut self, now: Instant, asking: Asking, to: SocketAddr) -> Vec<Outgoing> {
        self.ask_about(now, asking, to, None)
    }

    fn ask_about(
        &mut self,
        now: Instant,
        asking: Asking,
        to: SocketAddr,
        call: Option<[u8; 16]>,
    ) -> Vec<Outgoing> {
        let Some(datagram) = self.write(asking, call) else {
            return Vec::new();
        };
        if matches!(asking, Asking::FullRrq | Asking::Grq) {
            self.gatekeeper = Some(to);
        }
        let flight = InFlight {
            asking,
            to,
            datagram: datagram.clone(),
            seq: self.phone.last_seq(),
            attempts: 1,
            retry_at: now + RETRY_AFTER,
            call,
        };
        match asking {
            Asking::Arq { .. } | Asking::Drq => self.call_requests.push(flight),
            _ => self.in_flight = Some(flight),
        }
        vec![Outgoing { to, datagram }]
    }
}
