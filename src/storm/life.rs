//! One simulated phone's life on its line of the storm's port (its own address): GRQ to the
//! discovery address, RRQ at the C-LAN the GCF names, retransmissions on timeout with the
//! same sequence number (as a real endpoint's RAS timer does, doubling the wait each time),
//! simulated loss each way, keep-alives while the storm lasts, re-registration when the
//! gatekeeper sends URQ, and an optional URQ at the end. With `--sockets` the phone also
//! keeps a TCP socket at the C-LAN for each registration ([`super::signalling`]): started at
//! each full RCF, dropped when a gatekeeper-sent URQ ends the registration, noted and closed
//! at the storm's end before any URQ.
//!
//! With `--calls-per-s` the phone places the routed calls the storm's schedule gives it
//! ([`super::calls`]) while it stays: an ARQ at the C-LAN it registered at, as for
//! `--calls` — its ACF must be `gatekeeperRouted` and name the C-LAN that holds its socket
//! — then the Setup on its socket, which the socket task ([`super::call_signalling`])
//! carries to its end; when the call is over, a DRQ. The ARQ and DRQ go from here because
//! the phone's RAS line is here; the socket task never waits for them. With `--pregranted`
//! the Setup goes without ARQ or DRQ, and the gatekeeper tells the caller by the Setup's
//! `endpointIdentifier`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc::UnboundedReceiver;

use super::call_signalling::{Dial, Placed};
use super::calls::{CallOrder, CallTally, Finished};
use super::port::Line;
use super::signalling::{self, PhoneSocket};
use super::wall_clock::wall_time;
use crate::pcap::Datagram;
use crate::phone::{Answer, Phone};
use crate::phone_timing::NO_CONNECT;
use crate::ras::Alias;

/// How long the phones have, once the storm ends (or is interrupted), for their URQ: a phone
/// with no UCF by then is counted and left.
pub(super) const UNREGISTER_WITHIN: Duration = Duration::from_secs(5);

/// Is this GRJ or RRJ (`message`, `reason` by its ASN.1 name) one a retry cannot change?
/// The same request gets the same answer: an alias another endpoint holds, a password the
/// gatekeeper refuses, an address or alias it finds invalid. The phone then stops trying at
/// once (a storm once sent 120,000 RRQs at aliases an earlier storm's phones still held).
/// `resourceUnavailable`, `discoveryRequired`, `fullRegistrationRequired`,
/// `undefinedReason` and the like change with the gatekeeper's state, and are tried again.
pub(super) fn final_reject(message: &str, reason: &str) -> bool {
    match message {
        "RRJ" => matches!(
            reason,
            "duplicateAlias"
                | "securityDenial"
                | "securityError"
                | "invalidAlias"
                | "invalidTerminalAliases"
                | "invalidRevision"
                | "invalidCallSignalAddress"
                | "invalidRASAddress"
                | "invalidTerminalType"
                | "transportNotSupported"
                | "transportQOSNotSupported"
                | "additiveRegistrationNotSupported"
                | "neededFeatureNotSupported"
        ),
        "GRJ" => matches!(
            reason,
            "terminalExcluded"
                | "invalidRevision"
                | "securityDenial"
                | "securityError"
                | "neededFeatureNotSupported"
        ),
        _ => false,
    }
}

/// Completes when the storm's end (as `end` says it, set early when the storm is
/// interrupted) has come; never, while it is not set or once its sender is gone without one.
async fn the_end(mut end: tokio::sync::watch::Receiver<Option<Instant>>) {
    loop {
        let until = *end.borrow_and_update();
        match until {
            Some(until) if Instant::now() >= until => return,
            Some(until) => tokio::select! {
                () = tokio::time::sleep_until(until.into()) => return,
                changed = end.changed() => if changed.is_err() { return },
            },
            None => {
                if end.changed().await.is_err() {
                    return std::future::pending().await;
                }
            }
        }
    }
}

/// A phone's attempts ended by a rejection a retry cannot change ([`final_reject`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refused {
    /// The message and reason, `"RRJ duplicateAlias"`.
    pub reject: String,
    /// The phone's first alias.
    pub alias: String,
    /// Its RAS address.
    pub phone: SocketAddr,
}

/// What every phone of a storm shares.
pub(super) struct Plan {
    /// The gatekeeper's discovery address.
    pub target: SocketAddr,
    /// Wait for an answer this long before sending again.
    pub timeout: Duration,
    /// Sends again at most this often per request.
    pub retries: u32,
    /// Probability that a datagram is lost, each way.
    pub loss: f64,
    /// When phones stop trying to register the first time.
    pub give_up: Instant,
    /// How long a later registration is tried (after a gatekeeper URQ or a keep-alive not
    /// answered with an RCF) before the phone gives up: `--give-up-s` again, from then.
    pub try_for: Duration,
    /// Send URQ at the end (unless `--leave-registered`).
    pub unregister: bool,
    /// Where to record every datagram, if anywhere.
    pub record: Option<Arc<Mutex<Vec<Datagram>>>>,
    /// Outbound calls each phone places once registered (ARQ, then DRQ).
    pub calls: u32,
    /// The digits each call dials (the phone's extension is appended).
    pub dial: String,
    /// How long each call is held between ACF and DRQ.
    pub hold: Duration,
    /// Routed calls (`--calls-per-s`): how long each is held after its Connect.
    pub call_hold: Duration,
    /// Routed calls go without ARQ and DRQ (`--pregranted`).
    pub pregranted: bool,
}

/// A phone's part in the storm's routed calls: the calls it is told to place, and the
/// calls it placed as its socket task reports them when they are over.
pub(super) struct Caller {
    /// From the storm's schedule.
    pub orders: UnboundedReceiver<CallOrder>,
    /// From its socket task.
    pub placed: UnboundedReceiver<Placed>,
    /// Counted as each call is over, for the schedule's wait.
    pub finished: Arc<Finished>,
    /// Calls whose ARQ was confirmed, by number: each gets its DRQ when it is over.
    admitted: HashMap<u64, [u8; 16]>,
}

/// What the caller heard.
enum CallEvent {
    /// Place this call.
    Order(CallOrder),
    /// This call is over.
    Over(Placed),
}

impl Caller {
    /// A caller fed by `orders`, hearing of its calls on `placed`.
    pub fn new(
        orders: UnboundedReceiver<CallOrder>,
        placed: UnboundedReceiver<Placed>,
        finished: Arc<Finished>,
    ) -> Caller {
        Caller {
            orders,
            placed,
            finished,
            admitted: HashMap::new(),
        }
    }

    /// The next order or call over; never, without a caller.
    async fn next(caller: Option<&mut Caller>) -> CallEvent {
        let Some(caller) = caller else {
            return std::future::pending().await;
        };
        tokio::select! {
            Some(order) = caller.orders.recv() => CallEvent::Order(order),
            Some(placed) = caller.placed.recv() => CallEvent::Over(placed),
            else => std::future::pending().await,
        }
    }
}

/// What came while a phone stayed registered.
enum Stayed {
    /// A datagram, or silence until the wake-up.
    Ras(Option<(Answer, SocketAddr)>),
    /// The storm's end was set (`true`: the storm is gone).
    End(bool),
    /// Something about its routed calls.
    Call(CallEvent),
}

/// How one phone's life went.
#[derive(Debug, Clone, Default)]
pub(super) struct Outcome {
    /// Registered (an RCF) at least once.
    pub registered: bool,
    /// The C-LAN its last RCF came from.
    pub clan: Option<SocketAddr>,
    /// From its first GRQ to its first RCF.
    pub latency: Option<Duration>,
    /// When its first RCF came.
    pub registered_at: Option<Instant>,
    /// When it sent its first GRQ, since the UNIX epoch.
    pub first_grq_sent: Option<Duration>,
    /// When the kernel received its first RCF, since the UNIX epoch.
    pub first_rcf_heard: Option<Duration>,
    /// Requests sent again after a timeout.
    pub retransmissions: u64,
    /// Rejects it got, by message and reason (`"GRJ resourceUnavailable"`).
    pub rejects: Vec<String>,
    /// Gatekeeper-sent URQs it answered.
    pub urqs: u64,
    /// Datagrams its simulated loss dropped.
    pub dropped: u64,
    /// Unregistered at the end with UCF.
    pub unregistered: bool,
    /// Sent URQ at the end and heard no UCF within [`UNREGISTER_WITHIN`].
    pub unregister_failed: bool,
    /// A rejection a retry cannot change ended its attempts.
    pub refused: Option<Refused>,
    /// `destCallSignalAddress` of each ACF (for a trunk call, the placing node).
    pub calls: Vec<SocketAddr>,
    /// Calls refused, by reason (`"ARJ resourceUnavailable"`) — also in `rejects`.
    pub calls_refused: u64,
    /// `callSignalAddress` of its last full RCF (in socket mode, its C-LAN's signalling
    /// address).
    pub call_signal_address: Option<SocketAddr>,
    /// How its sockets went (socket mode).
    pub sockets: signalling::Record,
    /// How the routed calls it placed went (`--calls-per-s`).
    pub routed: CallTally,
}

/// A phone with its line on the storm's port, its loss generator and its record.
pub(super) struct Life<'a> {
    pub phone: Phone,
    pub line: Line,
    pub rng: ChaCha8Rng,
    pub plan: &'a Plan,
    pub outcome: Outcome,
    /// Its signalling side, in socket mode.
    pub socket: Option<PhoneSocket>,
    /// Its part in routed calls (`--calls-per-s`).
    pub caller: Option<Caller>,
    /// This phone's seed (also part of its call identifiers).
    seed: u64,
    /// When the storm ends (set early when it is interrupted).
    end: tokio::sync::watch::Receiver<Option<Instant>>,
    /// When the kernel received the last datagram [`Life::receive`] returned, since the UNIX
    /// epoch: an RCF's is where its time to service starts.
    heard_at: Duration,
}

/// A `callIdentifier` of `phone` (of seed `seed`) ending in `tail`, which tells its calls
/// apart: the phone's extension, the seed's low half, then `tail`. A gatekeeper admits a
/// routed call's Setup by its callIdentifier, so two storms against one gatekeeper must not
/// make the same one: their phones' extensions differ (the gatekeeper refuses an alias
/// taken), though their seeds and phone numbers may not.
fn call_identifier(phone: &Phone, seed: u64, tail: [u8; 8]) -> [u8; 16] {
    let extension = phone
        .aliases
        .first()
        .and_then(|alias| alias.to_string().parse::<u32>().ok())
        .unwrap_or(0);
    let mut identifier = [0u8; 16];
    identifier[..4].copy_from_slice(&extension.to_be_bytes());
    identifier[4..8].copy_from_slice(&(seed as u32).to_be_bytes());
    identifier[8..].copy_from_slice(&tail);
    identifier
}

impl<'a> Life<'a> {
    /// A phone on its line; `end` says when the storm ends.
    pub fn new(
        phone: Phone,
        line: Line,
        seed: u64,
        plan: &'a Plan,
        end: tokio::sync::watch::Receiver<Option<Instant>>,
    ) -> Life<'a> {
        Life {
            phone,
            line,
            rng: ChaCha8Rng::seed_from_u64(seed),
            plan,
            outcome: Outcome::default(),
            socket: None,
            caller: None,
            seed,
            end,
            heard_at: Duration::ZERO,
        }
    }

    /// Has the storm's end come (an interrupted storm's end is set to the moment of the
    /// interruption)?
    fn ending(&self) -> bool {
        self.end
            .borrow()
            .is_some_and(|until| Instant::now() >= until)
    }

    /// Waits `wait`, or less when the storm ends meanwhile.
    async fn pause(&mut self, wait: Duration) {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = the_end(self.end.clone()) => {}
        }
    }

    /// [`exchange`](Self::exchange), given up when the storm ends meanwhile (an interrupted
    /// storm does not wait for a registration's timers).
    async fn exchange_until_the_end(&mut self, to: SocketAddr, datagram: &[u8]) -> Option<Answer> {
        let end = self.end.clone();
        tokio::select! {
            answer = self.exchange(to, datagram) => answer,
            () = the_end(end) => None,
        }
    }

    /// The plan's calls: ARQ at the C-LAN it registered at, hold, DRQ.
    async fn place_calls(&mut self) {
        let Some(clan) = self.outcome.clan else {
            return;
        };
        let extension = self
            .phone
            .aliases
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        let dialled = format!("{}{}", self.plan.dial, extension);
        for call in 0..self.plan.calls {
            let mut tail = [0u8; 8];
            tail[..4].copy_from_slice(&call.to_be_bytes());
            tail[4..].copy_from_slice(b"call");
            let call_id = call_identifier(&self.phone, self.seed, tail);
            let Some(arq) = self.phone.arq(&dialled, call_id) else {
                return;
            };
            match self.exchange(clan, &arq).await {
                Some(Answer::Acf {
                    dest: Some(dest), ..
                }) => {
                    self.outcome.calls.push(dest);
                    tokio::time::sleep(self.plan.hold).await;
                    if let Some(drq) = self.phone.drq(call_id) {
                        let _ = self.exchange(clan, &drq).await;
                    }
                }
                Some(Answer::Arj { reason, .. }) => {
                    self.outcome.calls_refused += 1;
                    self.note_reject("ARJ", &reason);
                }
                _ => {}
            }
        }
    }

    fn record(&self, src: SocketAddr, dst: SocketAddr, payload: &[u8]) {
        if let Some(record) = &self.plan.record {
            let datagram = Datagram {
                frame: 0,
                time: wall_time(),
                src,
                dst,
                payload: payload.to_vec(),
            };
            if let Ok(mut record) = record.lock() {
                record.push(datagram);
            }
        }
    }

    fn lost(&mut self) -> bool {
        let lost = self.plan.loss > 0.0 && self.rng.random_bool(self.plan.loss.min(1.0));
        if lost {
            self.outcome.dropped += 1;
        }
        lost
    }

    async fn send(&mut self, to: SocketAddr, datagram: &[u8]) {
        if self.lost() {
            return;
        }
        self.record(self.phone.ras_address, to, datagram);
        // A send error (e.g. a full buffer) is a lost datagram: the timer sends again.
        let _ = self.line.send_to(datagram, to).await;
    }

    /// Receives until `deadline`; answers a gatekeeper-sent IRQ with an IRR on the way (it
    /// changes nothing), and reports everything else, a gatekeeper-sent URQ among it.
    async fn receive(&mut self, deadline: Instant) -> Option<(Answer, SocketAddr)> {
        // The deadline on the wall clock, which the kernel's receive times are on.
        let by = wall_time() + deadline.saturating_duration_since(Instant::now());
        loop {
            let delivery = match deadline.checked_duration_since(Instant::now()) {
                Some(left) => match tokio::time::timeout(left, self.line.recv_from()).await {
                    Ok(delivery) => delivery,
                    // Silence until the deadline, as far as the router has read.
                    Err(_) => self.line.recv_by(by).await,
                },
                None => self.line.recv_by(by).await,
            };
            let Some((datagram, from, at)) = delivery else {
                // Nothing came by the deadline (or the port's router is gone: silence until
                // the deadline, as for a timeout).
                tokio::time::sleep_until(deadline.into()).await;
                return None;
            };
            if self.lost() {
                continue;
            }
            self.record(from, self.phone.ras_address, &datagram);
            match Answer::read(&datagram) {
                Ok(Answer::Irq { seq }) => {
                    if let Some(irr) = self.phone.irr(seq) {
                        self.send(from, &irr).await;
                    }
                }
                Ok(answer) => {
                    self.heard_at = at;
                    return Some((answer, from));
                }
                Err(_) => {}
            }
        }
    }

    /// Sends a request and waits for the answer with its sequence number, sending the same
    /// octets again after each timeout. A gatekeeper-sent URQ on the way is returned as is.
    async fn exchange(&mut self, to: SocketAddr, datagram: &[u8]) -> Option<Answer> {
        let seq = crate::ras::peek_request_seq_num(datagram)?;
        for attempt in 0..=self.plan.retries {
            if attempt > 0 {
                self.outcome.retransmissions += 1;
            }
            self.send(to, datagram).await;
            // The timer doubles on each retry (at most 8 s), so an overloaded gatekeeper is
            // not buried under retransmissions it cannot answer in time.
            let wait = (self.plan.timeout * (1 << attempt.min(6))).min(Duration::from_secs(8));
            let deadline = Instant::now() + wait.max(self.plan.timeout);
            while let Some((answer, from)) = self.receive(deadline).await {
                match answer {
                    Answer::Urq { seq: urq_seq, .. } => {
                        self.answer_urq(urq_seq, from).await;
                        return Some(answer);
                    }
                    answer if answer.seq() == seq => {
                        self.phone.learn(&answer);
                        return Some(answer);
                    }
                    _ => {} // a late answer to an earlier request
                }
            }
        }
        None
    }

    async fn answer_urq(&mut self, seq: u16, from: SocketAddr) {
        self.outcome.urqs += 1;
        let ucf = self.phone.ucf(seq);
        self.send(from, &ucf).await;
        self.phone.endpoint_id = None;
        if let Some(socket) = &mut self.socket {
            socket.unregistered().await;
        }
    }

    fn note_reject(&mut self, message: &str, reason: &str) {
        self.outcome.rejects.push(format!("{message} {reason}"));
    }

    /// A rejection a retry cannot change ends the phone's attempts.
    fn refused(&mut self, message: &str, reason: &str) {
        let alias = self.phone.aliases.first().map(ToString::to_string);
        self.outcome.refused = Some(Refused {
            reject: format!("{message} {reason}"),
            alias: alias.unwrap_or_default(),
            phone: self.phone.ras_address,
        });
    }

    /// GRQ → GCF → RRQ → RCF, starting over on silence or a reject, until registered or
    /// `give_up`. `agl` (after a gatekeeper-sent URQ) is tried first, RRQ directly.
    async fn register(
        &mut self,
        started: Instant,
        mut agl: Vec<SocketAddr>,
        give_up: Instant,
    ) -> bool {
        while Instant::now() < give_up && !self.ending() {
            let clan = match agl.first().copied() {
                Some(clan) => {
                    agl.remove(0);
                    clan
                }
                None => {
                    let grq = self.phone.grq();
                    self.outcome.first_grq_sent.get_or_insert_with(wall_time);
                    match self.exchange_until_the_end(self.plan.target, &grq).await {
                        Some(Answer::Gcf {
                            ras_address: Some(clan),
                            ..
                        }) => clan,
                        Some(Answer::Grj { reason, .. }) => {
                            self.note_reject("GRJ", &reason);
                            if final_reject("GRJ", &reason) {
                                self.refused("GRJ", &reason);
                                return false;
                            }
                            self.pause(self.plan.timeout).await;
                            continue;
                        }
                        _ => continue,
                    }
                }
            };
            let rrq = self.phone.rrq();
            match self.exchange_until_the_end(clan, &rrq).await {
                Some(Answer::Rcf {
                    call_signal_address,
                    service_frame,
                    ..
                }) => {
                    let now = Instant::now();
                    if !self.outcome.registered {
                        self.outcome.latency = Some(started.elapsed());
                        self.outcome.registered_at = Some(now);
                        self.outcome.first_rcf_heard = Some(self.heard_at);
                    }
                    self.outcome.registered = true;
                    self.outcome.clan = Some(clan);
                    self.outcome.call_signal_address = call_signal_address;
                    if let Some(socket) = &mut self.socket {
                        socket
                            .registered(
                                call_signal_address,
                                (self.heard_at, service_frame),
                                give_up,
                            )
                            .await;
                    }
                    return true;
                }
                Some(Answer::Rrj {
                    reason, alternates, ..
                }) => {
                    self.note_reject("RRJ", &reason);
                    if final_reject("RRJ", &reason) {
                        self.refused("RRJ", &reason);
                        return false;
                    }
                    if alternates.is_empty() {
                        // Nowhere else to try: wait a RAS timer before starting over, as after
                        // a GRJ, rather than asking again at once.
                        self.pause(self.plan.timeout).await;
                    }
                    agl = alternates;
                }
                Some(Answer::Urq { agl: next, .. }) => agl = next,
                _ => {}
            }
        }
        false
    }

    /// The whole life: register, then stay until the storm's end is set and reached
    /// (keep-alives every half TTL, re-registering after a gatekeeper-sent URQ), note its
    /// socket, unregister unless the storm leaves its phones registered, then close the
    /// socket. `registered` hears of the first registration (or the give-up, or a rejection
    /// a retry cannot change).
    pub async fn live(mut self, registered: tokio::sync::mpsc::UnboundedSender<bool>) -> Outcome {
        let started = Instant::now();
        let ok = self.register(started, Vec::new(), self.plan.give_up).await;
        if ok {
            self.place_calls().await;
        }
        let _ = registered.send(ok);
        if !ok {
            // Calls ordered from a phone that never registered fail as they are ordered.
            self.close_calls();
        }
        let stayed = ok && self.stay(started).await;
        let mut held = None;
        if let Some(mut socket) = self.socket.take() {
            if !stayed {
                // A registration lost on the way holds no socket at the end.
                socket.unregistered().await;
            }
            let (record, socket) = socket.end().await;
            self.outcome.sockets = record;
            held = socket;
        }
        self.close_calls();
        if stayed && self.plan.unregister {
            self.unregister().await;
        }
        // Closed after the URQ: the gatekeeper has closed it already (docs/rules.md §8.5), so
        // no TTS socket is set up again for a phone on its way out.
        drop(held);
        self.outcome
    }

    /// URQ at the C-LAN it registered at, answered UCF within [`UNREGISTER_WITHIN`], or
    /// counted as failed.
    async fn unregister(&mut self) {
        let Some(clan) = self.outcome.clan else {
            return;
        };
        let urq = self.phone.urq();
        let answered = tokio::time::timeout(UNREGISTER_WITHIN, self.exchange(clan, &urq)).await;
        match answered {
            Ok(Some(Answer::Ucf { .. })) => self.outcome.unregistered = true,
            _ => self.outcome.unregister_failed = true,
        }
    }

    /// Registers again (after a gatekeeper URQ, or a keep-alive not answered with an RCF),
    /// trying for [`Plan::try_for`] from now.
    async fn register_again(&mut self, started: Instant, agl: Vec<SocketAddr>) -> bool {
        let give_up = Instant::now() + self.plan.try_for;
        self.register(started, agl, give_up).await
    }

    /// Stays registered until the storm's end is set and reached, placing the routed calls
    /// it is told to; false when a re-registration failed (the phone is no longer
    /// registered).
    async fn stay(&mut self, started: Instant) -> bool {
        let mut end = self.end.clone();
        let mut ttl = Duration::from_secs(300);
        // Kept apart from the loop's wake-ups, which calls make frequent: a keep-alive is
        // due half a TTL after the last registration or keep-alive, however busy the phone.
        let mut keep_alive_at = Instant::now() + ttl / 2;
        loop {
            let until = *end.borrow();
            let now = Instant::now();
            if until.is_some_and(|until| now >= until) {
                return true;
            }
            let next = until.map_or(keep_alive_at, |until| keep_alive_at.min(until));
            let mut caller = self.caller.take();
            let heard = tokio::select! {
                heard = self.receive(next) => Stayed::Ras(heard),
                changed = end.changed() => Stayed::End(changed.is_err()),
                event = Caller::next(caller.as_mut()) => Stayed::Call(event),
            };
            self.caller = caller;
            let again = match heard {
                Stayed::End(true) => return true, // the storm is gone
                Stayed::Ras(Some((Answer::Urq { seq, agl, .. }, from))) => {
                    self.answer_urq(seq, from).await;
                    Some(agl)
                }
                Stayed::End(false) | Stayed::Ras(Some(_)) => None,
                Stayed::Call(CallEvent::Order(order)) => self.place(order).await,
                Stayed::Call(CallEvent::Over(placed)) => self.settle(placed).await,
                Stayed::Ras(None) if Instant::now() < keep_alive_at => None,
                Stayed::Ras(None) => {
                    // Half the TTL has passed: keep the registration alive.
                    let (Some(clan), Some(rrq)) = (self.outcome.clan, self.phone.keep_alive())
                    else {
                        return true;
                    };
                    match self.exchange(clan, &rrq).await {
                        Some(Answer::Rcf { time_to_live_s, .. }) => {
                            ttl = Duration::from_secs(u64::from(time_to_live_s.unwrap_or(300)));
                            None
                        }
                        Some(Answer::Urq { agl, .. }) => Some(agl),
                        _ => Some(Vec::new()),
                    }
                }
            };
            if let Some(agl) = again {
                if !self.register_again(started, agl).await {
                    return false;
                }
            }
            if Instant::now() >= keep_alive_at {
                keep_alive_at = Instant::now() + ttl / 2;
            }
        }
    }

    /// This phone's `callIdentifier` for routed call `number` (of the whole storm).
    fn call_identifier(&self, number: u64) -> [u8; 16] {
        call_identifier(&self.phone, self.seed, number.to_be_bytes())
    }

    /// Places routed call `order`: ARQ (unless pre-granted) for the number it dials, then
    /// the Setup on its socket. A call that fails before its Setup is over at once.
    /// `Some(agl)`: a gatekeeper URQ came instead of the ACF, and the phone must register
    /// again.
    async fn place(&mut self, order: CallOrder) -> Option<Vec<SocketAddr>> {
        let number = order.number;
        let in_service = self.socket.as_ref().and_then(PhoneSocket::serving);
        let callee = Alias::dialled_digits(&order.callee);
        let (Some(_), Ok(callee)) = (in_service, callee) else {
            return self.settle(Placed::failed(number, "not_in_service")).await;
        };
        let call_identifier = self.call_identifier(number);
        if !self.plan.pregranted {
            let (Some(clan), Some(arq)) = (
                self.outcome.clan,
                self.phone.arq(&order.callee, call_identifier),
            ) else {
                return self.settle(Placed::failed(number, "not_registered")).await;
            };
            let answer = self.exchange(clan, &arq).await;
            let names_its_clan = |dest: SocketAddr| {
                let socket = self.socket.as_ref();
                socket.is_some_and(|socket| socket.names_its_clan(dest))
            };
            let refused = match answer {
                Some(Answer::Acf {
                    dest: Some(dest),
                    routed: true,
                    ..
                }) if names_its_clan(dest) => None,
                Some(Answer::Acf { routed: false, .. }) => Some("acf_not_routed".to_string()),
                Some(Answer::Acf { .. }) => Some("acf_other_clan".to_string()),
                Some(Answer::Arj { reason, .. }) => {
                    self.note_reject("ARJ", &reason);
                    Some(format!("arj_{reason}"))
                }
                Some(Answer::Urq { agl, .. }) => {
                    self.settle(Placed::failed(number, "unregistered")).await;
                    return Some(agl);
                }
                _ => Some("no_acf".to_string()),
            };
            if let Some(reason) = refused {
                return self.settle(Placed::failed(number, reason)).await;
            }
            if let Some(caller) = &mut self.caller {
                caller.admitted.insert(number, call_identifier);
            }
        }
        let dial = Dial {
            number,
            call_identifier,
            caller: self.phone.aliases.clone(),
            callee,
            endpoint_identifier: self.phone.endpoint_id.clone(),
            connect_within: NO_CONNECT,
            hold: self.plan.call_hold,
        };
        let dialled = self.socket.as_ref().is_some_and(|socket| socket.dial(dial));
        if dialled {
            return None;
        }
        self.settle(Placed::failed(number, "not_in_service")).await
    }

    /// A routed call of this phone is over: a DRQ when its ARQ was confirmed, then it is
    /// counted. `Some(agl)`: a gatekeeper URQ came instead of the DCF.
    async fn settle(&mut self, placed: Placed) -> Option<Vec<SocketAddr>> {
        let admitted = self.caller.as_mut();
        let admitted = admitted.and_then(|caller| caller.admitted.remove(&placed.number));
        let mut again = None;
        if let (Some(call_identifier), Some(clan)) = (admitted, self.outcome.clan) {
            if let Some(drq) = self.phone.drq(call_identifier) {
                if let Some(Answer::Urq { agl, .. }) = self.exchange(clan, &drq).await {
                    again = Some(agl);
                }
            }
        }
        self.count_call(&placed);
        again
    }

    fn count_call(&mut self, placed: &Placed) {
        self.outcome.routed.count(placed, wall_time());
        if let Some(caller) = &self.caller {
            caller.finished.one();
        }
    }

    /// The storm ends, or the phone's life does: the calls its socket task reported over
    /// are counted (no DRQ: the phone is leaving), and so are the orders it will never
    /// carry out, as `not_registered`; no order reaches it any more.
    fn close_calls(&mut self) {
        let Some(mut caller) = self.caller.take() else {
            return;
        };
        caller.orders.close();
        let mut over = Vec::new();
        while let Ok(placed) = caller.placed.try_recv() {
            over.push(placed);
        }
        while let Ok(order) = caller.orders.try_recv() {
            over.push(Placed::failed(order.number, "not_registered"));
        }
        self.caller = Some(caller);
        for placed in &over {
            self.count_call(placed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phones_of_two_storms_with_one_seed_make_different_call_identifiers() {
        let first = Phone::extension(50_000, "127.1.1.1:1719".parse().unwrap());
        let other = Phone::extension(51_000, "[fd00:0:3::1:1]:1719".parse().unwrap());
        let (seed, call) = (1 ^ 0x9E37_79B9_7F4A_7C15, 7u64.to_be_bytes());
        let id = call_identifier(&first, seed, call);
        assert_ne!(id, call_identifier(&other, seed, call));
        assert_ne!(id, call_identifier(&first, seed, 8u64.to_be_bytes()));
        assert_eq!(id[..4], 50_000u32.to_be_bytes(), "the extension first");
        assert_eq!(id[8..], call, "the call's number last");
    }
}
