//! A simulated phone's calls, with no I/O: it places a call (ARQ, a connection to where the
//! ACF said, Setup; Alerting and Connect heard; Release Complete after its hold; DRQ) and
//! answers one (a Setup read on a connection it accepted: Call Proceeding, ARQ `answerCall`,
//! then Alerting and Connect once admitted; DRQ after the release) — H.323 clause 8.1's
//! set-up and clause 8.5's release, as a standard endpoint runs them.
//!
//! Its connections are named by [`Connection`]s the phone hands out: the driver opens the
//! ones a [`Signal::Connect`] asks for and says how it went ([`SimulatedPhone::connected`],
//! [`SimulatedPhone::connect_failed`]), hands over each it accepts
//! ([`SimulatedPhone::accepted`]) and what it reads on it ([`SimulatedPhone::read`]), and
//! writes and closes what [`SimulatedPhone::signals`] says. What happened to each call is
//! kept as [`CallNote`]s ([`SimulatedPhone::notes`]): the exam grades an endpoint's calls
//! from what its own phone heard.
//!
//! A phone that declines TTS closes every connection it accepted that carries no Setup
//! within [`DECLINE_AFTER`] (or whose first message is something else), as H323Plus closes a
//! connection whose first PDU is no Setup (docs/rules.md §8.6): it still answers calls.
//! Nothing a peer sends panics or grows memory without bound: at most
//! [`SimulatedPhone::max_calls`] calls ([`MAX_CALLS`] unless set) and twice as many
//! connections, frames of at most 65,535 octets.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::q931::{self, CallReference, MessageType, Release};
use crate::ras::Alias;
use crate::tpkt;

use super::{Asking, Misbehaviour, Outgoing, SimulatedPhone};

/// A phone that declines TTS closes an accepted connection that has carried no Setup this
/// long.
pub const DECLINE_AFTER: Duration = Duration::from_secs(1);

/// The most calls a phone takes part in at once unless told otherwise
/// ([`SimulatedPhone::max_calls`]); a Setup beyond them gets Release Complete. It holds at
/// most twice as many connections; one accepted beyond them is closed.
pub const MAX_CALLS: usize = 16;

/// How long a phone holds a call it placed after its Connect, unless told otherwise.
pub const HOLD: Duration = Duration::from_secs(5);

/// A connection of the phone's call signalling, as the phone names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Connection(pub u64);

/// What the phone asks of its driver's TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// Open a connection to `to`, then say how it went.
    Connect {
        /// Its name.
        connection: Connection,
        /// Where to.
        to: SocketAddr,
    },
    /// Write a TPKT frame on it.
    Send {
        /// Which.
        connection: Connection,
        /// The frame.
        frame: Bytes,
    },
    /// Close it.
    Close {
        /// Which.
        connection: Connection,
    },
}

/// What happened to a call of the phone's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallEvent {
    /// It asked to place the call: an ARQ for the number dialled.
    Dialled {
        /// The number.
        to: String,
    },
    /// Its ARQ was confirmed: the ACF's `destCallSignalAddress`, and whether the call is
    /// gatekeeper-routed.
    Admitted {
        /// Where the Setup goes.
        dest: Option<SocketAddr>,
        /// `callModel` gatekeeperRouted.
        routed: bool,
    },
    /// Its Setup was written on a connection to `to`.
    SetupWritten {
        /// Where the connection goes.
        to: SocketAddr,
    },
    /// A Setup was read on a connection from `from` (the phone is called).
    SetupRead {
        /// The connection's far end.
        from: SocketAddr,
        /// The Setup's `sourceAddress`.
        caller: Vec<String>,
    },
    /// Call Proceeding heard (a call it placed).
    Proceeding,
    /// Alerting heard (a call it placed).
    Alerting,
    /// Connect heard (a call it placed) or written (a call it answered).
    Connected,
    /// The call ended: Release Complete written by the phone (`by_peer` false) or read,
    /// with its cause, or its connection closed under it.
    Released {
        /// The other side ended it.
        by_peer: bool,
        /// What it said: `cause 16`, `reason calledPartyNotRegistered`, `connection closed`.
        cause: String,
    },
    /// The call failed before it was connected.
    Failed(Failure),
    /// DRQ sent for it.
    Disengaging,
}

/// Why a call failed before it was connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The phone was not registered.
    NotRegistered,
    /// The phone was in as many calls as it takes.
    TooManyCalls,
    /// Its ARQ or Setup could not be written (what, and why).
    Unwritable(String),
    /// The gatekeeper refused its ARQ: the ARJ's reason.
    Refused(String),
    /// Its ARQ of this sequence number got no answer.
    Unanswered(u16),
    /// The ACF named no `destCallSignalAddress`.
    NoDestination,
    /// The connection to where the ACF said could not be opened.
    Unreachable {
        /// Where it went.
        to: Option<SocketAddr>,
        /// What the system said.
        why: String,
    },
    /// No Connect this long after its Setup.
    NoConnect(Duration),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::NotRegistered => write!(f, "the phone was not registered"),
            Failure::TooManyCalls => write!(f, "the phone was in as many calls as it takes"),
            Failure::Unwritable(what) => write!(f, "{what}"),
            Failure::Refused(reason) => write!(f, "ARJ {reason}"),
            Failure::Unanswered(seq) => write!(f, "no answer to its ARQ seq {seq}"),
            Failure::NoDestination => write!(f, "its ACF named no destCallSignalAddress"),
            Failure::Unreachable { to: Some(to), why } => write!(f, "no connection to {to}: {why}"),
            Failure::Unreachable { to: None, why } => write!(f, "no connection: {why}"),
            Failure::NoConnect(within) => {
                write!(f, "no Connect within {} s of its Setup", within.as_secs())
            }
        }
    }
}

/// A call's event, when it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallNote {
    /// When.
    pub at: Instant,
    /// The call's `callIdentifier`.
    pub call_id: [u8; 16],
    /// What.
    pub event: CallEvent,
}

/// A call the phone takes part in.
#[derive(Debug, Clone)]
pub(super) struct Leg {
    pub(super) call_id: [u8; 16],
    /// It answers the call (it is the callee).
    pub(super) answering: bool,
    /// The number dialled (a call it places).
    pub(super) dialled: String,
    /// The gatekeeper admitted it.
    pub(super) admitted: bool,
    connection: Option<Connection>,
    /// The call reference the phone writes under.
    reference: CallReference,
    connected: bool,
    /// Connected: released then. Not yet: given up then.
    due: Option<Instant>,
    /// Its ARQ was refused `callerNotRegistered`: it is asked again once the phone has
    /// registered again (once).
    redial: Option<bool>,
}

/// One connection.
#[derive(Debug)]
struct Wire {
    peer: SocketAddr,
    frames: tpkt::Assembler,
    /// Accepted (not opened by the phone), and when.
    accepted: Option<Instant>,
    /// A Setup has come on it.
    carried_setup: bool,
}

impl Wire {
    /// When a phone that declines TTS closes it: an accepted connection that has carried
    /// no Setup, [`DECLINE_AFTER`] after it was accepted.
    fn declined_at(&self) -> Option<Instant> {
        self.accepted
            .filter(|_| !self.carried_setup)
            .map(|at| at + DECLINE_AFTER)
    }
}

/// A phone's calls and connections.
#[derive(Debug, Default)]
pub(super) struct Calls {
    pub(super) legs: Vec<Leg>,
    wires: HashMap<Connection, Wire>,
    next_connection: u64,
    last_reference: u16,
    signals: Vec<Signal>,
    notes: Vec<CallNote>,
}

impl Clone for Calls {
    fn clone(&self) -> Calls {
        // A phone is cloned (tests, plans) only between calls: its connections stay with the
        // driver of the original.
        Calls {
            legs: self.legs.clone(),
            wires: HashMap::new(),
            next_connection: self.next_connection,
            last_reference: self.last_reference,
            signals: Vec::new(),
            notes: self.notes.clone(),
        }
    }
}

/// What a Release Complete says of why: its Q.931 cause, else its H.225.0 reason.
fn release_cause(message: &q931::Message<'_>, payload: &[u8]) -> String {
    if let Some(cause) = message.cause() {
        return format!("cause {cause}");
    }
    match q931::facts(payload) {
        Ok((_, facts)) => facts
            .release_reason
            .map_or_else(|| "no cause".to_string(), |r| format!("reason {r}")),
        Err(_) => "no cause".to_string(),
    }
}

fn framed(payload: &[u8]) -> Option<Bytes> {
    tpkt::frame(payload).ok()
}

impl Calls {
    fn note(&mut self, at: Instant, call_id: [u8; 16], event: CallEvent) {
        // Bounded: the driver takes them after every input; a driver that never does keeps
        // the last few thousand.
        if self.notes.len() >= 4096 {
            self.notes.drain(..1024);
        }
        self.notes.push(CallNote { at, call_id, event });
    }

    fn send(&mut self, connection: Connection, payload: &[u8]) {
        if let Some(frame) = framed(payload) {
            self.signals.push(Signal::Send { connection, frame });
        }
    }

    fn close(&mut self, connection: Connection) {
        if self.wires.remove(&connection).is_some() {
            self.signals.push(Signal::Close { connection });
        }
    }

    fn new_connection(&mut self) -> Connection {
        self.next_connection += 1;
        Connection(self.next_connection)
    }

    /// The calls on `connection`.
    fn on(&self, connection: Connection) -> Vec<[u8; 16]> {
        self.legs
            .iter()
            .filter(|l| l.connection == Some(connection))
            .map(|l| l.call_id)
            .collect()
    }

    fn leg(&mut self, call_id: [u8; 16]) -> Option<&mut Leg> {
        self.legs.iter_mut().find(|l| l.call_id == call_id)
    }

    /// When a call's or a connection's timer is next due.
    pub(super) fn deadline(&self, declines: bool) -> Option<Instant> {
        let legs = self.legs.iter().filter_map(|l| l.due);
        let wires = self
            .wires
            .values()
            .filter(|_| declines)
            .filter_map(Wire::declined_at);
        legs.chain(wires).min()
    }
}

impl SimulatedPhone {
    /// Places a call to `dialled` with `call_id`: its ARQ, or nothing when the phone is not
    /// registered or already in as many calls as it takes (noted as failed).
    pub fn dial(&mut self, now: Instant, dialled: &str, call_id: [u8; 16]) -> Vec<Outgoing> {
        let Some(to) = self.gatekeeper.filter(|_| self.registered) else {
            self.calls
                .note(now, call_id, CallEvent::Failed(Failure::NotRegistered));
            return Vec::new();
        };
        if self.calls.legs.len() >= self.max_calls || self.calls.leg(call_id).is_some() {
            self.calls
                .note(now, call_id, CallEvent::Failed(Failure::TooManyCalls));
            return Vec::new();
        }
        self.calls.legs.push(Leg {
            call_id,
            answering: false,
            dialled: dialled.to_string(),
            admitted: false,
            connection: None,
            reference: CallReference::from_originator(0),
            connected: false,
            due: None,
            redial: None,
        });
        self.calls.note(
            now,
            call_id,
            CallEvent::Dialled {
                to: dialled.to_string(),
            },
        );
        let out = self.ask_about(now, Asking::Arq { answer: false }, to, Some(call_id));
        if out.is_empty() {
            return self.end_call(
                now,
                call_id,
                CallEvent::Failed(Failure::Unwritable(format!(
                    "no ARQ could be written for {dialled}"
                ))),
            );
        }
        out
    }

    /// A connection it accepted from `peer`: its name.
    pub fn accepted(&mut self, now: Instant, peer: SocketAddr) -> Connection {
        let connection = self.calls.new_connection();
        self.calls.wires.insert(
            connection,
            Wire {
                peer,
                frames: tpkt::Assembler::new(u16::MAX),
                accepted: Some(now),
                carried_setup: false,
            },
        );
        if self.calls.wires.len() > 2 * self.max_calls {
            self.calls.close(connection);
        }
        connection
    }

    /// A connection it asked for is open: the Setup of its call goes on it.
    pub fn connected(&mut self, now: Instant, connection: Connection) -> Vec<Outgoing> {
        let Some(peer) = self.calls.wires.get(&connection).map(|w| w.peer) else {
            return Vec::new();
        };
        let Some(index) = self
            .calls
            .legs
            .iter()
            .position(|l| l.connection == Some(connection))
        else {
            self.calls.close(connection);
            return Vec::new();
        };
        self.calls.last_reference = self.calls.last_reference % CallReference::MAX + 1;
        let reference = CallReference::from_originator(self.calls.last_reference);
        let leg = &mut self.calls.legs[index];
        leg.reference = reference;
        leg.due = Some(now + self.connect_within);
        let (call_id, dialled) = (leg.call_id, leg.dialled.clone());
        let destination: Vec<Alias> = Alias::dialled_digits(&dialled)
            .or_else(|_| Alias::h323_id(&dialled))
            .ok()
            .into_iter()
            .collect();
        let setup = q931::setup(&q931::Setup {
            call_reference: reference,
            call_identifier: call_id,
            conference_id: call_id,
            source: &self.phone.aliases,
            destination: &destination,
            display: None,
            endpoint_identifier: self.phone.endpoint_id.as_ref(),
        });
        match setup {
            Ok(setup) => {
                self.calls.send(connection, &setup);
                self.calls
                    .note(now, call_id, CallEvent::SetupWritten { to: peer });
                Vec::new()
            }
            Err(e) => self.end_call(
                now,
                call_id,
                CallEvent::Failed(Failure::Unwritable(format!(
                    "its Setup could not be written: {e}"
                ))),
            ),
        }
    }

    /// A connection it asked for could not be opened, for `why`.
    pub fn connect_failed(
        &mut self,
        now: Instant,
        connection: Connection,
        why: &str,
    ) -> Vec<Outgoing> {
        let peer = self.calls.wires.remove(&connection).map(|w| w.peer);
        let calls = self.calls.on(connection);
        let mut out = Vec::new();
        for call_id in calls {
            let failure = Failure::Unreachable {
                to: peer,
                why: why.to_string(),
            };
            out.extend(self.end_call(now, call_id, CallEvent::Failed(failure)));
        }
        out
    }

    /// Octets read on a connection.
    pub fn read(&mut self, now: Instant, connection: Connection, octets: &[u8]) -> Vec<Outgoing> {
        let Some(wire) = self.calls.wires.get_mut(&connection) else {
            return Vec::new();
        };
        let mut payloads = Vec::new();
        if wire.frames.read(octets, &mut payloads).is_err() {
            return self.lost_connection(now, connection, "its stream was not TPKT");
        }
        let mut out = Vec::new();
        for payload in payloads.into_iter().filter(|p| !p.is_empty()) {
            out.extend(self.message(now, connection, &payload));
        }
        out
    }

    /// A connection closed under it (FIN or reset).
    pub fn closed(&mut self, now: Instant, connection: Connection) -> Vec<Outgoing> {
        if self.calls.wires.remove(&connection).is_none() {
            return Vec::new();
        }
        self.lost_connection(now, connection, "connection closed")
    }

    /// What it asks of its TCP since it was last asked.
    pub fn signals(&mut self) -> Vec<Signal> {
        std::mem::take(&mut self.calls.signals)
    }

    /// What happened to its calls since it was last asked.
    pub fn notes(&mut self) -> Vec<CallNote> {
        std::mem::take(&mut self.calls.notes)
    }

    /// Its calls in progress: (`callIdentifier`, answering, admitted).
    pub fn calls(&self) -> Vec<([u8; 16], bool, bool)> {
        self.calls
            .legs
            .iter()
            .map(|l| (l.call_id, l.answering, l.admitted))
            .collect()
    }

    fn lost_connection(
        &mut self,
        now: Instant,
        connection: Connection,
        why: &str,
    ) -> Vec<Outgoing> {
        self.calls.close(connection);
        let calls = self.calls.on(connection);
        let mut out = Vec::new();
        for call_id in calls {
            out.extend(self.end_call(
                now,
                call_id,
                CallEvent::Released {
                    by_peer: true,
                    cause: why.to_string(),
                },
            ));
        }
        out
    }

    fn message(&mut self, now: Instant, connection: Connection, payload: &[u8]) -> Vec<Outgoing> {
        let Ok(message) = q931::Message::parse(payload) else {
            return Vec::new();
        };
        let reference = message.call_reference;
        let first = self
            .calls
            .wires
            .get_mut(&connection)
            .map(|w| {
                let first = !w.carried_setup;
                w.carried_setup |= message.message_type == MessageType::Setup;
                first
            })
            .unwrap_or(false);
        if first
            && message.message_type != MessageType::Setup
            && self.does(Misbehaviour::DeclinesTts)
            && self
                .calls
                .wires
                .get(&connection)
                .is_some_and(|w| w.accepted.is_some())
        {
            // The first message is no Setup: a gatekeeper's socket, declined.
            self.calls.close(connection);
            return Vec::new();
        }
        let leg =
            self.calls.legs.iter().position(|l| {
                l.connection == Some(connection) && l.reference.value == reference.value
            });
        let Some(index) = leg else {
            if message.message_type == MessageType::Setup && !reference.from_destination {
                return self.offered_setup(now, connection, reference, payload);
            }
            return Vec::new();
        };
        let call_id = self.calls.legs[index].call_id;
        match message.message_type {
            MessageType::CallProceeding => {
                self.calls.note(now, call_id, CallEvent::Proceeding);
                Vec::new()
            }
            MessageType::Alerting => {
                self.calls.note(now, call_id, CallEvent::Alerting);
                Vec::new()
            }
            MessageType::Connect => {
                let leg = &mut self.calls.legs[index];
                if !leg.answering && !leg.connected {
                    leg.connected = true;
                    leg.due = Some(now + self.hold);
                    self.calls.note(now, call_id, CallEvent::Connected);
                }
                Vec::new()
            }
            MessageType::ReleaseComplete => {
                let cause = release_cause(&message, payload);
                self.end_call(
                    now,
                    call_id,
                    CallEvent::Released {
                        by_peer: true,
                        cause,
                    },
                )
            }
            _ => Vec::new(),
        }
    }

    /// A Setup read on `connection`: Call Proceeding, and an ARQ to answer it.
    fn offered_setup(
        &mut self,
        now: Instant,
        connection: Connection,
        reference: CallReference,
        payload: &[u8],
    ) -> Vec<Outgoing> {
        let reply = reference.reversed();
        let Ok((_, facts)) = q931::facts(payload) else {
            let release = q931::release_complete(reply, None, Release::InvalidMessage);
            self.calls.send(connection, &release);
            return Vec::new();
        };
        let call_id = facts.call_identifier.unwrap_or_default();
        let registered = self.gatekeeper.filter(|_| self.registered);
        if registered.is_none()
            || self.calls.legs.len() >= self.max_calls
            || self.calls.leg(call_id).is_some()
        {
            let release =
                q931::release_complete(reply, Some(call_id), Release::GatekeeperResources);
            self.calls.send(connection, &release);
            return Vec::new();
        }
        let from = self
            .calls
            .wires
            .get(&connection)
            .map(|w| w.peer)
            .unwrap_or_else(|| self.phone.call_signal_address);
        self.calls.note(
            now,
            call_id,
            CallEvent::SetupRead {
                from,
                caller: facts
                    .source_aliases
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
            },
        );
        self.calls
            .send(connection, &q931::call_proceeding(reply, call_id));
        self.calls.legs.push(Leg {
            call_id,
            answering: true,
            dialled: String::new(),
            admitted: false,
            connection: Some(connection),
            reference: reply,
            connected: false,
            due: None,
            redial: None,
        });
        let to = registered.expect("registered");
        self.ask_about(now, Asking::Arq { answer: true }, to, Some(call_id))
    }

    /// The gatekeeper's answer to the ARQ of `call_id`: `dest` and `routed` of its ACF, or
    /// why there was none (its ARJ, or no answer).
    pub(super) fn admission(
        &mut self,
        now: Instant,
        call_id: [u8; 16],
        answer: Result<(Option<SocketAddr>, bool), Failure>,
    ) -> Vec<Outgoing> {
        let Some(leg) = self.calls.leg(call_id) else {
            return Vec::new();
        };
        let answering = leg.answering;
        let (dest, routed) = match answer {
            Ok(admitted) => admitted,
            // The gatekeeper lost its registration (a restart it has not learnt of yet): it
            // registers again at once, as H323Plus does on this reason, and asks again.
            Err(Failure::Refused(reason))
                if reason == "callerNotRegistered" && !answering && leg.redial.is_none() =>
            {
                leg.redial = Some(true);
                let Some(to) = self.gatekeeper else {
                    return Vec::new();
                };
                self.registered = false;
                self.keep_alive_at = None;
                return self.ask(now, Asking::FullRrq, to);
            }
            Err(failure) => return self.end_call(now, call_id, CallEvent::Failed(failure)),
        };
        leg.admitted = true;
        self.calls
            .note(now, call_id, CallEvent::Admitted { dest, routed });
        if answering {
            let Some(leg) = self.calls.leg(call_id) else {
                return Vec::new();
            };
            let (reference, connection) = (leg.reference, leg.connection);
            leg.connected = true;
            leg.due = self.answered_hold.map(|hold| now + hold);
            if let Some(connection) = connection {
                self.calls
                    .send(connection, &q931::alerting(reference, call_id));
                self.calls
                    .send(connection, &q931::connect(reference, call_id, call_id));
            }
            self.calls.note(now, call_id, CallEvent::Connected);
            return Vec::new();
        }
        let Some(dest) = dest else {
            return self.end_call(now, call_id, CallEvent::Failed(Failure::NoDestination));
        };
        let connection = self.calls.new_connection();
        self.calls.wires.insert(
            connection,
            Wire {
                peer: dest,
                frames: tpkt::Assembler::new(u16::MAX),
                accepted: None,
                carried_setup: true,
            },
        );
        if let Some(leg) = self.calls.leg(call_id) {
            leg.connection = Some(connection);
        }
        self.calls.signals.push(Signal::Connect {
            connection,
            to: dest,
        });
        Vec::new()
    }

    /// Registered again: the calls waiting for it ask admission again.
    pub(super) fn redial(&mut self, now: Instant) -> Vec<Outgoing> {
        let Some(to) = self.gatekeeper else {
            return Vec::new();
        };
        let waiting: Vec<[u8; 16]> = self
            .calls
            .legs
            .iter_mut()
            .filter(|l| l.redial == Some(true))
            .map(|l| {
                l.redial = Some(false);
                l.call_id
            })
            .collect();
        let mut out = Vec::new();
        for call_id in waiting {
            out.extend(self.ask_about(now, Asking::Arq { answer: false }, to, Some(call_id)));
        }
        out
    }

    /// The calls' timers: a connected call held long enough is released, one not
    /// connected in time given up; a gatekeeper's socket with no Setup declined.
    pub(super) fn call_timers(&mut self, now: Instant) -> Vec<Outgoing> {
        let mut out = Vec::new();
        let due: Vec<([u8; 16], bool)> = self
            .calls
            .legs
            .iter()
            .filter(|l| l.due.is_some_and(|at| at <= now))
            .map(|l| (l.call_id, l.connected))
            .collect();
        for (call_id, connected) in due {
            let Some(leg) = self.calls.leg(call_id) else {
                continue;
            };
            let (reference, connection) = (leg.reference, leg.connection);
            if let Some(connection) = connection {
                let release =
                    q931::release_complete(reference, Some(call_id), Release::NormalClearing);
                self.calls.send(connection, &release);
            }
            let event = if connected {
                CallEvent::Released {
                    by_peer: false,
                    cause: "cause 16".into(),
                }
            } else {
                CallEvent::Failed(Failure::NoConnect(self.connect_within))
            };
            out.extend(self.end_call(now, call_id, event));
        }
        if self.does(Misbehaviour::DeclinesTts) {
            let idle: Vec<Connection> = self
                .calls
                .wires
                .iter()
                .filter(|(_, w)| w.declined_at().is_some_and(|at| at <= now))
                .map(|(&c, _)| c)
                .collect();
            for connection in idle {
                self.calls.close(connection);
            }
        }
        out
    }

    /// A call ends with `event`: the connection the phone opened for it closes, and the
    /// gatekeeper is told (DRQ) when it had admitted it.
    fn end_call(&mut self, now: Instant, call_id: [u8; 16], event: CallEvent) -> Vec<Outgoing> {
        let Some(index) = self.calls.legs.iter().position(|l| l.call_id == call_id) else {
            return Vec::new();
        };
        let leg = self.calls.legs.remove(index);
        self.calls.note(now, call_id, event);
        if let Some(connection) = leg.connection {
            let opened_by_phone = self
                .calls
                .wires
                .get(&connection)
                .is_some_and(|w| w.accepted.is_none());
            let still_used = self
                .calls
                .legs
                .iter()
                .any(|l| l.connection == Some(connection));
            if opened_by_phone && !still_used {
                self.calls.close(connection);
            }
        }
        if !leg.admitted || self.does(Misbehaviour::NoDrq) {
            return Vec::new();
        }
        let Some(to) = self.gatekeeper else {
            return Vec::new();
        };
        self.calls.note(now, call_id, CallEvent::Disengaging);
        self.ask_about(now, Asking::Drq, to, Some(call_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phone::Phone;
    use proptest::prelude::*;

    fn phone() -> SimulatedPhone {
        let mut phone = Phone::extension(4001, "127.1.0.5:1719".parse().unwrap());
        phone.call_signal_address = "127.1.0.5:1720".parse().unwrap();
        SimulatedPhone::new(phone, "127.0.0.1:1719".parse().unwrap(), &[])
    }

    fn setup_frame(call_id: [u8; 16]) -> Bytes {
        let callee = [Alias::dialled_digits("4001").unwrap()];
        let setup = q931::setup(&q931::Setup {
            call_reference: CallReference::from_originator(7),
            call_identifier: call_id,
            conference_id: call_id,
            source: &[],
            destination: &callee,
            display: None,
            endpoint_identifier: None,
        })
        .unwrap();
        framed(&setup).unwrap()
    }

    /// The messages written on `connection`, by type.
    fn written(signals: &[Signal], connection: Connection) -> Vec<MessageType> {
        signals
            .iter()
            .filter_map(|s| match s {
                Signal::Send {
                    connection: c,
                    frame,
                } if *c == connection => q931::Message::parse(&frame[tpkt::HEADER..])
                    .ok()
                    .map(|m| m.message_type),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_setup_to_a_phone_not_registered_is_released_and_makes_no_call() {
        let mut sim = phone();
        let now = Instant::now();
        let connection = sim.accepted(now, "127.0.1.1:40000".parse().unwrap());
        let out = sim.read(now, connection, &setup_frame([9; 16]));
        assert!(out.is_empty(), "no ARQ from a phone not registered");
        let signals = sim.signals();
        assert_eq!(
            written(&signals, connection),
            [MessageType::ReleaseComplete]
        );
        assert!(sim.calls().is_empty());
    }

    #[test]
    fn a_phone_that_declines_tts_closes_a_connection_that_carries_no_setup() {
        let mut phone = Phone::extension(5001, "127.1.0.5:1719".parse().unwrap());
        phone.call_signal_address = "127.1.0.5:1720".parse().unwrap();
        let mut sim = SimulatedPhone::new(
            phone,
            "127.0.0.1:1719".parse().unwrap(),
            &[Misbehaviour::DeclinesTts],
        );
        let now = Instant::now();
        let connection = sim.accepted(now, "127.0.1.1:40000".parse().unwrap());
        assert_eq!(sim.deadline(), Some(now + DECLINE_AFTER));
        sim.tick(now + DECLINE_AFTER);
        assert_eq!(sim.signals(), [Signal::Close { connection }]);
        // One that keeps its socket holds it.
        let mut keeper = self::phone();
        keeper.accepted(now, "127.0.1.1:40000".parse().unwrap());
        keeper.tick(now + DECLINE_AFTER * 10);
        assert!(keeper.signals().is_empty());
    }

    proptest! {
        /// Whatever a peer writes, the phone neither panics nor holds more than its bounds.
        #[test]
        fn nothing_a_peer_writes_panics(pieces in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..300), 0..20)
        ) {
            let mut sim = phone();
            let now = Instant::now();
            let connection = sim.accepted(now, "127.0.1.1:40000".parse().unwrap());
            for piece in &pieces {
                sim.read(now, connection, piece);
                // A Setup among the noise, too.
                sim.read(now, connection, &setup_frame([3; 16]));
            }
            sim.tick(now + Duration::from_secs(60));
            prop_assert!(sim.calls().len() <= MAX_CALLS);
            prop_assert!(sim.calls.wires.len() <= 2 * MAX_CALLS);
        }
    }
}
