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

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::phone::{Answer, Phone};

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
}

/// A call the phone takes part in (the exam's `call-in` and `call-out`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLeg {
    /// The call's `callIdentifier`.
    pub call_id: [u8; 16],
    /// It answers the call (it is the callee).
    pub answering: bool,
    /// The gatekeeper admitted it.
    pub admitted: bool,
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
    in_flight: Option<InFlight>,
    calls: Vec<CallLeg>,
    registrations: u32,
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
            calls: Vec::new(),
            registrations: 0,
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

    /// Its calls, released ones gone.
    pub fn calls(&self) -> &[CallLeg] {
        &self.calls
    }

    /// Starts: a GRQ to the discovery address.
    pub fn start(&mut self, now: Instant) -> Vec<Outgoing> {
        self.discover(now)
    }

    /// When [`tick`](Self::tick) next has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        let retry = self.in_flight.as_ref().map(|f| f.retry_at);
        match (retry, self.keep_alive_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Timers: a request sent again or given up; a keep-alive due.
    pub fn tick(&mut self, now: Instant) -> Vec<Outgoing> {
        let mut out = Vec::new();
        if let Some(flight) = self.in_flight.as_mut().filter(|f| f.retry_at <= now) {
            if flight.attempts >= ATTEMPTS {
                let asking = flight.asking;
                self.in_flight = None;
                out.extend(self.given_up(now, asking));
            } else {
                flight.attempts += 1;
                flight.retry_at = now + RETRY_AFTER;
                if self
                    .misbehaviours
                    .contains(&Misbehaviour::NewSeqOnRetransmit)
                {
                    let (asking, to, attempts) = (flight.asking, flight.to, flight.attempts);
                    if let Some(datagram) = self.write(asking, None) {
                        let seq = self.phone.last_seq();
                        self.in_flight = Some(InFlight {
                            asking,
                            to,
                            datagram: datagram.clone(),
                            seq,
                            attempts,
                            retry_at: now + RETRY_AFTER,
                        });
                        out.push(Outgoing { to, datagram });
                    }
                } else {
                    out.push(Outgoing {
                        to: flight.to,
                        datagram: flight.datagram.clone(),
                    });
                }
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
        out
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
                if flight.asking == Asking::FullRrq {
                    self.registrations += 1;
                    self.agl = agl;
                    self.walked = 0;
                }
                if let Some(ttl) = time_to_live_s {
                    self.time_to_live = Some(Duration::from_secs(u64::from(ttl)));
                }
                self.arm_keep_alive(now);
                Vec::new()
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
            Answer::Acf { .. } => {
                if let Some(leg) = self.calls.iter_mut().find(|l| !l.admitted) {
                    leg.admitted = true;
                }
                Vec::new()
            }
            Answer::Arj { .. } => {
                self.calls.retain(|l| l.admitted);
                Vec::new()
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

    fn given_up(&mut self, now: Instant, asking: Asking) -> Vec<Outgoing> {
        match asking {
            Asking::Grq => self.discover(now),
            Asking::FullRrq | Asking::KeepAlive => self.lost(now),
            Asking::Arq { .. } | Asking::Drq => Vec::new(),
        }
    }

    fn arm_keep_alive(&mut self, now: Instant) {
        if self.does(Misbehaviour::NeverKeepsAlive) {
            return;
        }
        if let Some(ttl) = self.time_to_live {
            self.keep_alive_at = Some(now + ttl.mul_f64(KEEP_ALIVE_AT));
        }
    }

    /// Writes a request of `asking` (a new sequence number); `call` for ARQ and DRQ.
    fn write(&mut self, asking: Asking, call: Option<[u8; 16]>) -> Option<Vec<u8>> {
        match asking {
            Asking::Grq => Some(self.phone.grq()),
            Asking::FullRrq => Some(self.phone.rrq()),
            Asking::KeepAlive => self.phone.keep_alive(),
            Asking::Arq { answer } => {
                let call_id = call.or_else(|| self.calls.last().map(|l| l.call_id))?;
                if answer {
                    self.phone.answer_arq(call_id)
                } else {
                    None
                }
            }
            Asking::Drq => {
                let call_id = call.or_else(|| self.calls.last().map(|l| l.call_id))?;
                self.phone.drq(call_id)
            }
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
        self.in_flight = Some(InFlight {
            asking,
            to,
            datagram: datagram.clone(),
            seq: self.phone.last_seq(),
            attempts: 1,
            retry_at: now + RETRY_AFTER,
        });
        vec![Outgoing { to, datagram }]
    }

    /// A call to it arrives (a Setup, however it came): it asks its gatekeeper for
    /// admission to answer it (ARQ `answerCall`).
    pub fn offered(&mut self, now: Instant, call_id: [u8; 16]) -> Vec<Outgoing> {
        let Some(to) = self.gatekeeper.filter(|_| self.registered) else {
            return Vec::new();
        };
        self.calls.push(CallLeg {
            call_id,
            answering: true,
            admitted: false,
        });
        self.ask_about(now, Asking::Arq { answer: true }, to, Some(call_id))
    }

    /// A call of its is released: DRQ with its `callIdentifier` (unless it sends none).
    pub fn released(&mut self, now: Instant, call_id: [u8; 16]) -> Vec<Outgoing> {
        let Some(index) = self.calls.iter().position(|l| l.call_id == call_id) else {
            return Vec::new();
        };
        let leg = self.calls.remove(index);
        if !leg.admitted || self.does(Misbehaviour::NoDrq) {
            return Vec::new();
        }
        let Some(to) = self.gatekeeper else {
            return Vec::new();
        };
        if self.in_flight.is_some() {
            // One request at a time: a DRQ waits for nothing; the earlier request's
            // retransmissions go on.
            let datagram = self.phone.drq(call_id);
            return datagram
                .map(|datagram| Outgoing { to, datagram })
                .into_iter()
                .collect();
        }
        self.ask_about(now, Asking::Drq, to, Some(call_id))
    }

    /// A TTS phone's answer to a socket the gatekeeper opened to it: keeps it, or, if it
    /// declines TTS, closes it.
    pub fn keeps_tts_socket(&self) -> bool {
        !self.does(Misbehaviour::DeclinesTts)
    }
}
