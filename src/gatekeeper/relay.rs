//! Routed calls (`call_signalling = "routed"`, docs/rules.md §8.7): the calls between
//! registered phones whose Q.931 call signalling the gatekeeper relays over the C-LANs'
//! sockets, as the core keeps them. The behaviour is in [`routed`](super::routed); this
//! module holds the state and the rules' words.
//!
//! ```text
//!   caller ──Setup (CRV c, flag 0)──▶ C-LAN ── relay ──▶ C-LAN ──Setup (CRV d, flag 0)──▶ callee
//!   caller ◀──Connect (c, flag 1)──── C-LAN ◀─ relay ─── C-LAN ◀──Connect (d, flag 1)──── callee
//! ```
//!
//! A call has two **legs**, each a connection and a call reference value on it: the
//! caller's (the value the caller chose) and the callee's (a value the gatekeeper chose,
//! unique on that connection). A message is found its call by the connection it came on,
//! its call reference value and the flag that says who chose the value: flag 0 from the
//! side that chose it (the caller on its leg), flag 1 from the other side (the callee on the
//! leg the gatekeeper opened).
//!
//! **Call connections.** Most legs run on a phone's socket. A connection a call needs
//! beyond a phone's socket — a second connection of a phone that holds its socket already,
//! or one accepted in routed mode that no waiting phone claims and whose Setup has not told
//! yet whose it is — is a *call connection*: it takes a place on its C-LAN within the cap
//! and frees it when it closes.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::signalling::ConnectionId;
use super::stats::LatencyHistogram;
use super::topology::ClanIdx;

/// Calls a phone may have in progress at once as the caller; a Setup beyond them is
/// released (`too_many_calls`). A phone that floods Setups holds at most this many callee
/// legs open on other phones.
pub const MAX_CALLS_PER_PHONE: usize = 16;

/// Frames held for a callee leg whose connection is not up yet; more are dropped (counted).
pub const MAX_HELD_FRAMES: usize = 16;

/// How long an ACF's `callIdentifier` is remembered to tell who sends its Setup.
pub const ADMISSION_LIFE: Duration = Duration::from_secs(30);

/// The most ACFs remembered at once; the oldest is forgotten first.
pub const MAX_ADMISSIONS: usize = 65_536;

/// How long the legs of a call that ended are remembered, so that what crosses its end —
/// the other side's own Release Complete, as H323Plus sends one after its endSession even
/// when it received one — is dropped quietly rather than counted as bad.
pub const ENDED_LEG_LIFE: Duration = Duration::from_secs(4);

/// The most ended legs remembered at once; the oldest is forgotten first.
pub const MAX_ENDED_LEGS: usize = 65_536;

/// A routed call, numbered by the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct CallNo(pub u64);

/// Which side of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The phone that sent the Setup.
    Caller,
    /// The phone the Setup was routed to.
    Callee,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Caller => Side::Callee,
            Side::Callee => Side::Caller,
        }
    }
}

/// Where a routed call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// The Setup is on its way to the callee (its connection may still be opening).
    Setup,
    /// The callee sent Call Proceeding.
    Proceeding,
    /// The callee is ringing (Alerting).
    Alerting,
    /// The callee answered (Connect).
    Connected,
}

impl CallState {
    /// The label the admin port shows.
    pub fn name(self) -> &'static str {
        match self {
            CallState::Setup => "setup",
            CallState::Proceeding => "proceeding",
            CallState::Alerting => "alerting",
            CallState::Connected => "connected",
        }
    }
}

/// Why a routed call ended, or why a Setup made none, as counted in `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallEnd {
    /// The caller sent Release Complete.
    CallerReleased,
    /// The callee sent Release Complete.
    CalleeReleased,
    /// A leg's connection closed (FIN, RST, keep-alive, a bad frame).
    DroppedLeg,
    /// A DRQ of either phone.
    Disengaged,
    /// Either phone's registration ended.
    Unregistered,
    /// A leg's C-LAN left service.
    ClanOutOfService,
    /// The callee did not answer within `call_setup_timeout_s`.
    NoAnswer,
    /// The destination is no registered phone.
    CalledPartyNotRegistered,
    /// The Setup came from no registered phone (or from another phone's address).
    Stranger,
    /// The callee's connection could not be opened.
    Unreachable,
    /// The callee's C-LAN had no room for the connection the call needs.
    NoRoom,
    /// The caller had [`MAX_CALLS_PER_PHONE`] calls in progress.
    TooManyCalls,
    /// The Setup's user-user information did not decode.
    Malformed,
}

impl CallEnd {
    /// Every reason, in counter order.
    pub const ALL: [CallEnd; 13] = [
        CallEnd::CallerReleased,
        CallEnd::CalleeReleased,
        CallEnd::DroppedLeg,
        CallEnd::Disengaged,
        CallEnd::Unregistered,
        CallEnd::ClanOutOfService,
        CallEnd::NoAnswer,
        CallEnd::CalledPartyNotRegistered,
        CallEnd::Stranger,
        CallEnd::Unreachable,
        CallEnd::NoRoom,
        CallEnd::TooManyCalls,
        CallEnd::Malformed,
    ];

    /// The label `/metrics` shows.
    pub fn name(self) -> &'static str {
        match self {
            CallEnd::CallerReleased => "caller_released",
            CallEnd::CalleeReleased => "callee_released",
            CallEnd::DroppedLeg => "dropped_leg",
            CallEnd::Disengaged => "disengaged",
            CallEnd::Unregistered => "unregistered",
            CallEnd::ClanOutOfService => "clan_out_of_service",
            CallEnd::NoAnswer => "no_answer",
            CallEnd::CalledPartyNotRegistered => "called_party_not_registered",
            CallEnd::Stranger => "stranger",
            CallEnd::Unreachable => "unreachable",
            CallEnd::NoRoom => "no_room",
            CallEnd::TooManyCalls => "too_many_calls",
            CallEnd::Malformed => "malformed",
        }
    }
}

/// What was wrong with a message on a signalling connection that belongs to no call, as
/// counted in `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BadSignal {
    /// Not a Q.931 message (discriminator, call reference, message type).
    Q931,
    /// A message other than Setup for a call reference no call has.
    UnknownCall,
    /// A Setup again for a call reference that has a call.
    RepeatedSetup,
    /// More frames for a callee leg not yet up than are held.
    HeldOver,
    /// A call connection that sent no Setup of a registered phone in time (closed).
    Unidentified,
}

impl BadSignal {
    /// Every kind, in counter order.
    pub const ALL: [BadSignal; 5] = [
        BadSignal::Q931,
        BadSignal::UnknownCall,
        BadSignal::RepeatedSetup,
        BadSignal::HeldOver,
        BadSignal::Unidentified,
    ];

    /// The label `/metrics` shows.
    pub fn name(self) -> &'static str {
        match self {
            BadSignal::Q931 => "q931",
            BadSignal::UnknownCall => "unknown_call",
            BadSignal::RepeatedSetup => "repeated_setup",
            BadSignal::HeldOver => "held_over",
            BadSignal::Unidentified => "unidentified",
        }
    }
}

/// One leg: a connection and a call reference value on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leg {
    /// The connection.
    pub connection: ConnectionId,
    /// The call reference value (15 bits).
    pub crv: u16,
    /// The C-LAN of the connection.
    pub clan: ClanIdx,
}

/// A routed call.
#[derive(Debug, Clone)]
pub struct RoutedCall {
    /// Its `callIdentifier`.
    pub call_identifier: [u8; 16],
    /// The calling phone (registration key).
    pub caller: u64,
    /// The called phone.
    pub callee: u64,
    /// The caller's leg.
    pub caller_leg: Leg,
    /// The callee's leg: `None` while its connection is being set up.
    pub callee_leg: Option<Leg>,
    /// The C-LAN the callee's connection is set up on, while `callee_leg` is `None`.
    pub callee_clan: ClanIdx,
    /// Where it stands.
    pub state: CallState,
    /// When the Setup arrived.
    pub setup_at: Instant,
    /// When the callee's Connect arrived.
    pub connected_at: Option<Instant>,
    /// Frames for the callee's leg, held until its connection is up (the Setup first).
    pub held: Vec<Bytes>,
    /// When it is released `noAnswer` unless answered.
    pub answer_by: Instant,
}

impl RoutedCall {
    /// The leg of a side, if it is up.
    pub fn leg(&self, side: Side) -> Option<Leg> {
        match side {
            Side::Caller => Some(self.caller_leg),
            Side::Callee => self.callee_leg,
        }
    }

    /// The phone of a side.
    pub fn phone(&self, side: Side) -> u64 {
        match side {
            Side::Caller => self.caller,
            Side::Callee => self.callee,
        }
    }
}

/// A connection beyond a phone's socket that carries calls (module doc), holding a place on
/// its C-LAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallConnection {
    /// Its C-LAN.
    pub clan: ClanIdx,
    /// The phone whose calls it carries; `None` until a Setup on it says.
    pub owner: Option<u64>,
    /// Its source IP (an accepted connection's).
    pub from: std::net::IpAddr,
    /// When it is closed unless a Setup from a registered phone has come.
    pub identify_by: Instant,
}

/// An ACF of a routed call: who was admitted, to tell who sends its Setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// The phone the ACF answered.
    pub caller: u64,
    /// When it is forgotten.
    pub until: Instant,
}

/// A deadline of the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RelayTimer {
    /// A call's `call_setup_timeout_s` is over.
    NoAnswer(CallNo),
    /// A call connection's time to show whose it is is over.
    Identify(ConnectionId),
}

/// Counters of routed calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CallStats {
    /// Setups that made a call (relayed to a callee, or held for its connection).
    pub setups: u64,
    /// Calls the callee answered.
    pub connected: u64,
    /// Calls that ended, and Setups that made none, by reason.
    pub ended: BTreeMap<CallEnd, u64>,
    /// Of those, the ones that ended before the callee answered.
    pub failed: BTreeMap<CallEnd, u64>,
    /// Messages that belong to no call, by what was wrong.
    pub bad: BTreeMap<BadSignal, u64>,
    /// Messages relayed from one leg to the other.
    pub relayed: u64,
    /// Release Completes the gatekeeper wrote itself.
    pub released: u64,
    /// Messages for a call that had just ended (crossing its end), dropped.
    pub late: u64,
    /// Call connections accepted or opened.
    pub call_connections: u64,
    /// Setup → Connect.
    pub setup_to_connect: LatencyHistogram,
}

/// Everything the relay keeps.
#[derive(Debug, Default)]
pub(super) struct Relay {
    pub calls: HashMap<CallNo, RoutedCall>,
    /// A leg by (connection, call reference value, chosen by the sender of a message on
    /// it): a caller's leg is found by messages with flag 0, a callee's with flag 1.
    pub legs: HashMap<(ConnectionId, u16, Side), CallNo>,
    /// The calls with a leg on each connection.
    pub by_connection: HashMap<ConnectionId, BTreeSet<CallNo>>,
    /// A call by its `callIdentifier` (for DRQ).
    pub by_call_identifier: HashMap<[u8; 16], CallNo>,
    /// The calls of each phone, either side.
    pub of_phone: HashMap<u64, BTreeSet<CallNo>>,
    /// Calls waiting for a phone's socket (or a connection opened for them) to come up.
    pub waiting_for: HashMap<u64, Vec<CallNo>>,
    /// Calls to a standard endpoint whose only connection carries a call already: they
    /// wait for it to close, then get a connection of their own (docs/rules.md §8.7).
    pub busy_for: HashMap<u64, Vec<CallNo>>,
    /// Connections beyond the phones' sockets.
    pub connections: HashMap<ConnectionId, CallConnection>,
    /// ACFs of routed calls by `callIdentifier`, and their order of expiry.
    pub admissions: HashMap<[u8; 16], Admission>,
    pub admitted: VecDeque<[u8; 16]>,
    pub timers: BTreeSet<(Instant, RelayTimer)>,
    /// The legs of calls that ended lately, and when each is forgotten, in that order.
    pub ended_legs: HashMap<(ConnectionId, u16, Side), Instant>,
    pub ended_order: VecDeque<((ConnectionId, u16, Side), Instant)>,
    pub stats: CallStats,
    /// Call connections per C-LAN, in configuration order.
    pub per_clan: Vec<u32>,
    next_call: u64,
    next_crv: u16,
}

impl Relay {
    /// Empty, for `clans` C-LANs.
    pub fn new(clans: usize) -> Relay {
        Relay {
            per_clan: vec![0; clans],
            ..Relay::default()
        }
    }

    pub fn new_call(&mut self) -> CallNo {
        self.next_call += 1;
        CallNo(self.next_call)
    }

    /// A call reference value for a new callee leg on `connection`: 1..=0x7FFF, none in use
    /// there by a leg the gatekeeper chose.
    pub fn new_crv(&mut self, connection: ConnectionId) -> u16 {
        loop {
            self.next_crv = self.next_crv % 0x7FFF + 1;
            if !self
                .legs
                .contains_key(&(connection, self.next_crv, Side::Callee))
            {
                return self.next_crv;
            }
        }
    }

    /// Counts why a call ended (or a Setup made none), and whether before an answer.
    pub fn count_end(&mut self, reason: CallEnd, answered: bool) {
        *self.stats.ended.entry(reason).or_default() += 1;
        if !answered {
            *self.stats.failed.entry(reason).or_default() += 1;
        }
    }

    pub fn count_bad(&mut self, kind: BadSignal) {
        *self.stats.bad.entry(kind).or_default() += 1;
    }

    /// Remembers the ACF of a routed call (bounded: the oldest goes first), forgetting the
    /// expired ones.
    pub fn admit(&mut self, now: Instant, call_identifier: [u8; 16], caller: u64) {
        self.forget_admissions(now);
        if self.admissions.len() >= MAX_ADMISSIONS {
            if let Some(oldest) = self.admitted.pop_front() {
                self.admissions.remove(&oldest);
            }
        }
        let until = now + ADMISSION_LIFE;
        if self
            .admissions
            .insert(call_identifier, Admission { caller, until })
            .is_none()
        {
            self.admitted.push_back(call_identifier);
        }
    }

    /// The phone an ACF for `call_identifier` answered, if remembered.
    pub fn admitted_caller(&self, now: Instant, call_identifier: &[u8; 16]) -> Option<u64> {
        self.admissions
            .get(call_identifier)
            .filter(|a| a.until > now)
            .map(|a| a.caller)
    }

    fn forget_admissions(&mut self, now: Instant) {
        while let Some(first) = self.admitted.front() {
            match self.admissions.get(first) {
                Some(a) if a.until > now => break,
                _ => {
                    let first = *first;
                    self.admitted.pop_front();
                    if self.admissions.get(&first).is_some_and(|a| a.until <= now) {
                        self.admissions.remove(&first);
                    }
                }
            }
        }
    }

    /// Remembers the legs of a call that ended at `now` (module doc of [`ENDED_LEG_LIFE`]).
    pub fn note_ended(&mut self, now: Instant, call: &RoutedCall) {
        self.forget_ended(now);
        let legs = [
            Some((call.caller_leg, Side::Caller)),
            call.callee_leg.map(|leg| (leg, Side::Callee)),
        ];
        for (leg, side) in legs.into_iter().flatten() {
            if self.ended_order.len() >= MAX_ENDED_LEGS {
                if let Some((key, until)) = self.ended_order.pop_front() {
                    if self.ended_legs.get(&key) == Some(&until) {
                        self.ended_legs.remove(&key);
                    }
                }
            }
            let key = (leg.connection, leg.crv, side);
            let until = now + ENDED_LEG_LIFE;
            self.ended_legs.insert(key, until);
            self.ended_order.push_back((key, until));
        }
    }

    /// Is `(connection, crv, side)` the leg of a call that ended lately?
    pub fn ended_lately(&mut self, now: Instant, leg: (ConnectionId, u16, Side)) -> bool {
        self.forget_ended(now);
        self.ended_legs.contains_key(&leg)
    }

    fn forget_ended(&mut self, now: Instant) {
        while let Some(&(key, until)) = self.ended_order.front() {
            if until > now {
                break;
            }
            self.ended_order.pop_front();
            if self.ended_legs.get(&key) == Some(&until) {
                self.ended_legs.remove(&key);
            }
        }
    }

    /// The soonest deadline.
    pub fn next_timer(&self) -> Option<Instant> {
        self.timers.first().map(|&(at, _)| at)
    }

    /// Calls in progress with `phone` as the caller.
    pub fn calls_as_caller(&self, phone: u64) -> usize {
        self.of_phone.get(&phone).map_or(0, |calls| {
            calls
                .iter()
                .filter(|no| self.calls.get(no).is_some_and(|c| c.caller == phone))
                .count()
        })
    }

    /// Files a new call under its phones and its legs.
    pub fn insert(&mut self, no: CallNo, call: RoutedCall) {
        self.of_phone.entry(call.caller).or_default().insert(no);
        self.of_phone.entry(call.callee).or_default().insert(no);
        self.file_leg(no, Side::Caller, call.caller_leg);
        if let Some(leg) = call.callee_leg {
            self.file_leg(no, Side::Callee, leg);
        }
        self.by_call_identifier.insert(call.call_identifier, no);
        self.timers
            .insert((call.answer_by, RelayTimer::NoAnswer(no)));
        self.calls.insert(no, call);
    }

    /// Unfiles a call; it is returned.
    pub fn remove(&mut self, no: CallNo) -> Option<RoutedCall> {
        let call = self.calls.remove(&no)?;
        for phone in [call.caller, call.callee] {
            if let Some(calls) = self.of_phone.get_mut(&phone) {
                calls.remove(&no);
                if calls.is_empty() {
                    self.of_phone.remove(&phone);
                }
            }
        }
        self.unfile_leg(no, Side::Caller, call.caller_leg);
        if let Some(leg) = call.callee_leg {
            self.unfile_leg(no, Side::Callee, leg);
        }
        if self.by_call_identifier.get(&call.call_identifier) == Some(&no) {
            self.by_call_identifier.remove(&call.call_identifier);
        }
        self.timers
            .remove(&(call.answer_by, RelayTimer::NoAnswer(no)));
        if let Some(waiting) = self.waiting_for.get_mut(&call.callee) {
            waiting.retain(|&other| other != no);
            if waiting.is_empty() {
                self.waiting_for.remove(&call.callee);
            }
        }
        Some(call)
    }

    /// Files a leg of call `no` under its connection and call reference.
    pub fn file_leg(&mut self, no: CallNo, side: Side, leg: Leg) {
        self.legs.insert((leg.connection, leg.crv, side), no);
        self.by_connection
            .entry(leg.connection)
            .or_default()
            .insert(no);
    }

    fn unfile_leg(&mut self, no: CallNo, side: Side, leg: Leg) {
        self.legs.remove(&(leg.connection, leg.crv, side));
        if let Some(calls) = self.by_connection.get_mut(&leg.connection) {
            calls.remove(&no);
            if calls.is_empty() {
                self.by_connection.remove(&leg.connection);
            }
        }
    }

    /// The calls with a leg on `connection`, oldest first.
    pub fn calls_on(&self, connection: ConnectionId) -> Vec<CallNo> {
        self.by_connection
            .get(&connection)
            .map_or_else(Vec::new, |calls| calls.iter().copied().collect())
    }

    /// Does any call have a leg on `connection`?
    pub fn carries(&self, connection: ConnectionId) -> bool {
        self.by_connection.contains_key(&connection)
    }
}
