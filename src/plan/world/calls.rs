//! Routed calls in a plan (`call_signalling = "routed"`, docs/rules.md §16.2): the
//! phones' calls to one another through the gatekeeper's relay, carried as the glue
//! carries them — each Q.931 frame a phone writes is handed to the core
//! ([`Gatekeeper::frame`](crate::gatekeeper::Gatekeeper::frame), then `received`) and each
//! frame the core writes reaches the phone at the other end of its connection.
//!
//! ```text
//!   caller ── ARQ (callee's extension) ─▶ ACF gatekeeperRouted
//!   caller ── Setup (CRV c, flag 0) on its socket ─▶ core ─▶ callee's connection
//!   callee ── Call Proceeding, Alerting, Connect (the Setup's CRV, flag 1) ─▶ core ─▶ caller
//!   caller ── call_hold_s after the Connect: Release Complete, then DRQ
//! ```
//!
//! The phones do what `rasgk storm`'s do with routed calls (`src/storm/call_signalling.rs`):
//!
//! - Each phone calls the phone half the scenario's population away
//!   ([`roster::callee`]).
//! - A caller sends its Setup only on its socket in service. One without, or whose ACF is
//!   not routed (its callee is not registered and the digits found a trunk), places the call
//!   as a trunk call is placed (ARQ, hold, DRQ), and the plan counts it
//!   ([`CallTally::as_today`](crate::plan::tally::CallTally::as_today)).
//! - A phone answers every Setup on its connection at once. A Setup on a connection the
//!   gatekeeper opened for the call (it writes no service frame there) puts the phone in
//!   service on it: the core keeps it as the phone's socket.
//! - The caller holds the call `call_hold_s` from its Connect; without a Connect within
//!   [`NO_CONNECT`] it gives up with a Release Complete.
//! - A Release Complete of the gatekeeper's, the caller's socket closed, or its
//!   registration gone ends the call before its hold (a *cut* call), and the DRQ follows
//!   at once.
//! - Every frame takes `latency_ms` one way, as every step of a connection does
//!   (docs/rules.md §16.1); the frames of one connection arrive in the order written.
//!
//! At every sample the core's routed calls per C-LAN are checked against what the phones
//! know: at least the answered calls with a leg there (the caller's socket's C-LAN, and
//! the C-LAN of the connection the Setup reached the callee on), at most those and every
//! call not settled yet (`below_answered` and `above_placed` of the tally count the samples
//! that are not).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;

use super::phones::Socket;
use super::{micros, Micros, PhoneTimer, What, World};
use crate::gatekeeper::ConnectionId;
use crate::phone_timing::NO_CONNECT;
use crate::plan::tally::RoutedCounts;
use crate::q931::{self, CallReference, MessageType};
use crate::roster;
use crate::tpkt;

/// The hasher of the calls' tables (never iterated in an order that reaches the report).
type Fast = foldhash::fast::FixedState;

/// Where a call the phones placed stands, as they see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The Setup is sent; no Connect yet.
    Placed,
    /// The caller read the Connect.
    Answered,
    /// The caller sent Release Complete (or gave the call up); it has not reached the
    /// gatekeeper yet.
    Releasing,
}

/// A routed call the phones placed.
#[derive(Debug, Clone, Copy)]
struct OpenCall {
    caller: u32,
    /// The caller's socket, and the call reference it chose.
    connection: ConnectionId,
    crv: u16,
    /// The C-LAN (trace) of the caller's socket, and of the connection the Setup reached
    /// the callee on.
    caller_clan: Option<usize>,
    callee_clan: Option<usize>,
    setup_at: Micros,
    stage: Stage,
}

impl OpenCall {
    /// The C-LANs (traces) of its legs, one each (a call with both on one C-LAN has one).
    fn clans(&self) -> impl Iterator<Item = usize> {
        let callee = self.callee_clan.filter(|&c| Some(c) != self.caller_clan);
        self.caller_clan.into_iter().chain(callee)
    }
}

/// The calls the phones placed through the relay and what they know of their legs.
#[derive(Debug, Default)]
pub(in crate::plan) struct Calls {
    /// Calls placed and not yet over for the phones, by `callIdentifier`.
    open: HashMap<[u8; 16], OpenCall, Fast>,
    /// Each connection's C-LAN (trace), as the phone at its end knows it: the listener it
    /// connected to, or the C-LAN the gatekeeper's connection came from.
    clan_of: HashMap<ConnectionId, usize, Fast>,
    /// The running configuration's C-LANs (traces) by signalling address, and by IP (the
    /// first in configuration order, where C-LANs share one).
    by_signal: HashMap<SocketAddr, usize>,
    by_ip: HashMap<IpAddr, usize>,
    /// Answered calls with a leg on each C-LAN (trace).
    answered_on: Vec<u32>,
    /// Calls placed and not answered, and calls whose Release Complete is on its way.
    unsettled: u32,
    /// The core's call connections counter at the last sample that read them, and whether
    /// any C-LAN had one then.
    connections_read: Option<(u64, bool)>,
}

impl Calls {
    /// The running configuration's C-LANs changed: `clans` are their signalling addresses,
    /// in configuration order, and `traces` their traces.
    pub fn configured(&mut self, clans: impl Iterator<Item = SocketAddr>, traces: &[usize]) {
        self.by_signal.clear();
        self.by_ip.clear();
        for (address, &trace) in clans.zip(traces) {
            self.by_signal.insert(address, trace);
            self.by_ip.entry(address.ip()).or_insert(trace);
        }
        let most = traces.iter().max().map_or(0, |&t| t + 1);
        if self.answered_on.len() < most {
            self.answered_on.resize(most, 0);
        }
    }

    /// A phone's connection accepted at `local`.
    pub fn accepted(&mut self, id: ConnectionId, local: SocketAddr) {
        if let Some(&trace) = self.by_signal.get(&local) {
            self.clan_of.insert(id, trace);
        }
    }

    /// The gatekeeper opens connection `id` from a C-LAN's IP `from`.
    pub fn opened(&mut self, id: ConnectionId, from: IpAddr) {
        if let Some(&trace) = self.by_ip.get(&from) {
            self.clan_of.insert(id, trace);
        }
    }

    /// Connection `id` is gone.
    pub fn closed(&mut self, id: ConnectionId) {
        self.clan_of.remove(&id);
    }

    /// The gatekeeper restarted: its connections are gone.
    pub fn restarted(&mut self) {
        self.clan_of.clear();
        self.connections_read = None;
    }

    /// Moves an answered call's legs out of (`-1`) or into (`1`) the answered counts.
    fn count_answered(&mut self, call: &OpenCall, by: i32) {
        for clan in call.clans() {
            let count = &mut self.answered_on[clan];
            *count = count.saturating_add_signed(by);
        }
    }
}

impl World<'_> {
    /// The extension a phone dials for its next call: another phone's when the gatekeeper
    /// relays calls, else the group's `dial` and its own (a trunk call).
    pub(in crate::plan) fn dialled(&self, phone: u32) -> String {
        let p = &self.phones[phone as usize];
        if self.gk.routed() {
            let callee = roster::callee(self.phones.len(), phone as usize);
            self.phones[callee].extension.to_string()
        } else {
            let dial = &self.scenario.groups[p.group as usize].dial;
            format!("{dial}{}", p.extension)
        }
    }

    /// Call `call` of `phone` was admitted (its hold is armed): a routed ACF and a socket in
    /// service send its Setup, and the hold waits for the Connect; otherwise it goes on as a
    /// trunk call, counted when it was a call to another phone.
    pub(in crate::plan) fn admitted(&mut self, phone: u32, call: [u8; 16], routed: bool) {
        let socket = self.phones[phone as usize].socket;
        let why = match (routed, socket) {
            (true, Socket::InService(id)) => {
                self.place(phone, id, call);
                return;
            }
            (true, _) => "no socket in service",
            (false, _) if self.gk.routed() => "ACF not routed",
            (false, _) => return,
        };
        *self
            .tally
            .routed
            .as_today
            .entry(why.to_string())
            .or_default() += 1;
    }

    /// Sends the Setup of call `call` on the caller's socket `id`; the caller gives up
    /// [`NO_CONNECT`] later without a Connect.
    fn place(&mut self, phone: u32, id: ConnectionId, call: [u8; 16]) {
        let callee = roster::callee(self.phones.len(), phone as usize);
        let destination = self.phones[callee].phone.aliases.clone();
        let p = &mut self.phones[phone as usize];
        p.crv = p.crv % 0x7FFF + 1;
        let crv = p.crv;
        let setup = q931::setup(&q931::Setup {
            call_reference: CallReference::from_originator(crv),
            call_identifier: call,
            conference_id: call,
            source: &p.phone.aliases,
            destination: &destination,
            display: None,
            endpoint_identifier: p.phone.endpoint_id.as_ref(),
        });
        let Some(framed) = setup.ok().and_then(|s| tpkt::frame(&s).ok()) else {
            return;
        };
        let caller_clan = self.calls.clan_of.get(&id).copied();
        self.calls.open.insert(
            call,
            OpenCall {
                caller: phone,
                connection: id,
                crv,
                caller_clan,
                callee_clan: None,
                setup_at: self.now,
                stage: Stage::Placed,
            },
        );
        self.calls.unsettled += 1;
        self.tally.routed.placed += 1;
        self.write(id, framed, None);
        let give_up = self.now + NO_CONNECT.as_micros() as Micros;
        self.arm(phone, PhoneTimer::Call, give_up);
    }

    /// A phone writes a frame on connection `id`; `releases` is the call its Release
    /// Complete ends.
    fn write(&mut self, id: ConnectionId, framed: Bytes, releases: Option<[u8; 16]>) {
        let epoch = self.epoch;
        // Boxed: rare, and the queue's jobs stay as small as they were.
        let releases = releases.map(Box::new);
        self.at(
            self.now + self.latency,
            What::Written {
                epoch,
                id,
                framed,
                releases,
            },
        );
    }

    /// A phone's frame reaches the gatekeeper's end of connection `id` (dropped when the
    /// connection is gone by then, as a closed socket's would be).
    pub(in crate::plan) fn written(
        &mut self,
        epoch: u32,
        id: ConnectionId,
        framed: &Bytes,
        releases: Option<Box<[u8; 16]>>,
    ) {
        if let Some(call) = releases.as_deref() {
            if self
                .calls
                .open
                .get(call)
                .is_some_and(|c| c.stage == Stage::Releasing)
            {
                self.calls.open.remove(call);
                self.calls.unsettled -= 1;
            }
        }
        if epoch != self.epoch || !self.has_connection(id) {
            return;
        }
        let now = self.instant();
        self.gk.frame(now, id, &framed[tpkt::HEADER..]);
        let read = tpkt::Read {
            octets: framed.len(),
            frames: 1,
        };
        self.gk.received(now, id, Ok(read));
        self.after_gatekeeper(Vec::new());
    }

    /// A frame of the gatekeeper's other than the service frame reaches `phone` on
    /// connection `id`: Q.931 of a routed call.
    pub(in crate::plan) fn signal(&mut self, phone: u32, id: ConnectionId, framed: &[u8]) {
        let Some(payload) = framed.get(tpkt::HEADER..) else {
            return;
        };
        let Ok(message) = q931::Message::parse(payload) else {
            return;
        };
        let socket = self.phones[phone as usize].socket;
        if !matches!(socket, Socket::Open(s) | Socket::InService(s) if s == id) {
            return; // a connection the phone no longer has
        }
        let crv = message.call_reference;
        match (message.message_type, crv.from_destination) {
            (MessageType::Setup, false) => {
                if socket == Socket::Open(id) {
                    self.taken_for_call(phone, id);
                }
                self.answer(id, crv, payload);
            }
            (MessageType::Connect, true) => self.answered(phone, id, crv.value),
            (MessageType::ReleaseComplete, true) if self.caller_leg(phone, id, crv.value) => {
                self.cut(phone, false);
                self.arm(phone, PhoneTimer::Call, self.now);
            }
            _ => {}
        }
    }

    /// The callee answers a Setup on connection `id` at once: Call Proceeding, Alerting and
    /// Connect.
    fn answer(&mut self, id: ConnectionId, crv: CallReference, payload: &[u8]) {
        let Ok((_, facts)) = q931::facts(payload) else {
            return;
        };
        let call = facts.call_identifier.unwrap_or_default();
        let conference = facts.conference_id.unwrap_or(call);
        let clan = self.calls.clan_of.get(&id).copied();
        if let Some(open) = self.calls.open.get_mut(&call) {
            open.callee_clan = clan;
        }
        let reply = crv.reversed();
        for message in [
            q931::call_proceeding(reply, call),
            q931::alerting(reply, call),
            q931::connect(reply, call, conference),
        ] {
            if let Ok(framed) = tpkt::frame(&message) {
                self.write(id, framed, None);
            }
        }
    }

    /// Is (`id`, `crv`) the leg of `phone`'s routed call in progress?
    fn caller_leg(&self, phone: u32, id: ConnectionId, crv: u16) -> bool {
        self.open_call_of(phone)
            .is_some_and(|(_, c)| c.connection == id && c.crv == crv)
    }

    /// `phone`'s routed call as the caller, placed or answered.
    fn open_call_of(&self, phone: u32) -> Option<([u8; 16], OpenCall)> {
        let call = self.phones[phone as usize].call?;
        let open = *self.calls.open.get(&call)?;
        (open.caller == phone && open.stage != Stage::Releasing).then_some((call, open))
    }

    /// The Connect of `phone`'s call reached it: the hold starts.
    fn answered(&mut self, phone: u32, id: ConnectionId, crv: u16) {
        let Some((call, open)) = self
            .open_call_of(phone)
            .filter(|(_, c)| c.connection == id && c.crv == crv && c.stage == Stage::Placed)
        else {
            return;
        };
        let answered = OpenCall {
            stage: Stage::Answered,
            ..open
        };
        self.calls.open.insert(call, answered);
        self.calls.unsettled -= 1;
        self.calls.count_answered(&answered, 1);
        let routed = &mut self.tally.routed;
        routed.setup_to_connect_us.push(self.now - open.setup_at);
        if let Some(clan) = open.caller_clan {
            self.tally.clans[clan].caller_legs += 1;
        }
        if let Some(clan) = open.callee_clan {
            self.tally.clans[clan].callee_legs += 1;
        }
        if let Some(event) = self.current_event {
            self.tally.events[event].calls_answered += 1;
        }
        if let Some(event) = self.phones[phone as usize].cut_after.take() {
            self.tally.events[event].called_again += 1;
        }
        let group = self.phones[phone as usize].group as usize;
        let hold = micros(self.scenario.groups[group].call_hold_s);
        self.arm(phone, PhoneTimer::Call, self.now + hold);
    }

    /// `phone` hangs up its routed call (its hold is over, or no Connect came in time: the
    /// DRQ follows) with a Release Complete on its socket; `false` when it had none in
    /// progress.
    pub(in crate::plan) fn hang_up(&mut self, phone: u32) -> bool {
        let Some((call, open)) = self.open_call_of(phone) else {
            return false;
        };
        if open.stage == Stage::Answered {
            self.calls.count_answered(&open, -1);
            self.calls.unsettled += 1;
        }
        self.calls.open.insert(
            call,
            OpenCall {
                stage: Stage::Releasing,
                ..open
            },
        );
        let message = q931::release_complete(
            CallReference::from_originator(open.crv),
            Some(call),
            q931::Release::NormalClearing,
        );
        match tpkt::frame(&message) {
            Ok(framed) => self.write(open.connection, framed, Some(call)),
            Err(_) => {
                self.calls.open.remove(&call);
                self.calls.unsettled -= 1;
            }
        }
        true
    }

    /// `phone` lost its routed call before its hold was over: `release` when its socket is
    /// still up and it says so with a Release Complete (its registration is gone), not
    /// when the gatekeeper ended the call or the socket is gone.
    pub(in crate::plan) fn cut(&mut self, phone: u32, release: bool) {
        let counted = if release {
            self.hang_up(phone)
        } else {
            match self.open_call_of(phone) {
                Some((call, open)) => {
                    self.calls.open.remove(&call);
                    if open.stage == Stage::Answered {
                        self.calls.count_answered(&open, -1);
                    } else {
                        self.calls.unsettled -= 1;
                    }
                    true
                }
                None => false,
            }
        };
        if !counted {
            return;
        }
        self.tally.routed.cut += 1;
        if let Some(event) = self.current_event {
            self.tally.events[event].calls_cut += 1;
            self.phones[phone as usize].cut_after = Some(event);
        }
    }

    /// `phone`'s routed call ended with its socket `id` closing under it.
    pub(in crate::plan) fn socket_lost_call(&mut self, phone: u32, id: ConnectionId) {
        if self
            .open_call_of(phone)
            .is_some_and(|(_, c)| c.connection == id)
        {
            self.cut(phone, false);
            self.arm(phone, PhoneTimer::Call, self.now);
        }
    }

    /// The core's routed-call counters over every life of the gatekeeper.
    pub(in crate::plan) fn routed_counts(&self) -> RoutedCounts {
        let now = RoutedCounts::of(self.gk.call_stats());
        self.tally.routed.earlier.plus(&now)
    }

    /// Samples the routed calls (and call connections) per C-LAN, and checks them against
    /// what the phones know (module doc).
    pub(in crate::plan) fn sample_calls(&mut self) {
        if !self.gk.routed() && self.calls.open.is_empty() {
            return;
        }
        let calls = self.gk.routed_calls_per_clan();
        // Call connections only when there may be any: none opened since a sample that
        // found none.
        let opened = self.gk.call_stats().call_connections;
        let call_connections: Option<Vec<u32>> = match self.calls.connections_read {
            Some((read, false)) if read == opened => None,
            _ => {
                let per_clan: Vec<u32> =
                    self.gk.clans().iter().map(|c| c.call_connections).collect();
                self.calls.connections_read = Some((opened, per_clan.iter().any(|&n| n > 0)));
                Some(per_clan)
            }
        };
        let routed = &mut self.tally.routed;
        for (&trace, &core) in self.trace_of.iter().zip(&calls) {
            let answered = self.calls.answered_on.get(trace).copied().unwrap_or(0);
            if core < answered {
                routed.below_answered += 1;
            }
            if core > answered + self.calls.unsettled {
                routed.above_placed += 1;
            }
        }
        self.tally.sample_calls(
            &self.trace_of,
            &calls,
            call_connections.as_deref(),
            self.current_event,
        );
    }

    /// Before event `index` acts: the routed calls in progress, per C-LAN; and the core's
    /// endings so far, to tell those the event makes.
    pub(in crate::plan) fn calls_before_event(&mut self, index: usize) -> Option<RoutedCounts> {
        if !self.gk.routed() {
            return None;
        }
        let now = self.instant();
        let in_progress = self.gk.routed_calls(now).len() as u32;
        let per_clan = self.gk.routed_calls_per_clan();
        let calls_on = self
            .trace_of
            .iter()
            .zip(per_clan)
            .filter(|&(_, calls)| calls > 0)
            .map(|(&trace, calls)| (trace, calls))
            .collect();
        let trace = &mut self.tally.events[index];
        trace.calls_in_progress = in_progress;
        trace.calls_on = calls_on;
        Some(self.routed_counts())
    }

    /// After event `index` acted: the calls it ended, by reason.
    pub(in crate::plan) fn calls_after_event(
        &mut self,
        index: usize,
        before: Option<RoutedCounts>,
    ) {
        let Some(before) = before else {
            return;
        };
        let after = self.routed_counts();
        let ended = &mut self.tally.events[index].calls_ended;
        for (reason, &count) in &after.ended {
            let earlier = before.ended.get(reason).copied().unwrap_or(0);
            if count > earlier {
                ended.insert(reason.clone(), count - earlier);
            }
        }
    }
}
