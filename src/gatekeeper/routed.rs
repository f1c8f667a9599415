//! The gatekeeper's side of routed calls (docs/rules.md §8.7): routed ACFs, the Q.931 relay
//! between the legs of a call, and how calls end ([`relay`](super::relay) holds the state
//! and the rules' words).
//!
//! ```text
//!   ARQ (routed)        ──▶ ACF gatekeeperRouted, the caller's C-LAN; callIdentifier kept
//!   frame on connection ──▶ Gatekeeper::frame ──▶ a Setup: who sent it, where it goes, the
//!                                                  callee's leg (its socket, or a connection
//!                                                  opened from its C-LAN)
//!                                              └─▶ any other: relayed to the other leg, its
//!                                                  call reference mapped
//!   close, DRQ, URQ, C-LAN out of service, no answer ──▶ Release Complete on both legs
//! ```
//!
//! Like the rest of the core it does no I/O: what it writes goes out as [`Command::Send`]
//! (a whole TPKT frame) and [`Command::Close`], next to socket mode's own commands.

use std::net::IpAddr;
use std::time::Instant;

use bytes::Bytes;

use super::events::Event;
use super::registry;
use super::relay::{
    BadSignal, CallConnection, CallEnd, CallNo, CallState, Leg, RelayTimer, RoutedCall, Side,
    MAX_CALLS_PER_PHONE, MAX_HELD_FRAMES,
};
use super::signalling::{Closing, Command, ConnectionId, Phase, Refusal};
use super::topology::ClanIdx;
use super::Gatekeeper;
use crate::config::CallSignalling;
use crate::q931::{self, CallReference, MessageType, Release};
use crate::ras::Alias;
use crate::tpkt;

/// Call connections one source IP may hold for each phone registered from it.
const CALL_CONNECTIONS_PER_PHONE: usize = 4;

/// Who owns a connection a frame came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// A phone's socket.
    Socket(u64),
    /// A call connection, of a phone or of nobody yet.
    CallConnection(Option<u64>),
}

impl Gatekeeper {
    /// Does this gatekeeper relay call signalling (`call_signalling = "routed"`, socket
    /// mode)?
    pub fn routed(&self) -> bool {
        self.socket_mode() && self.config.gatekeeper.call_signalling == CallSignalling::Routed
    }

    /// The signalling address of the C-LAN that carries a phone's calls: the one holding its
    /// socket, else the one it registered at.
    pub(super) fn call_clan(&self, key: u64) -> Option<ClanIdx> {
        let registration = self.registry.get(key)?;
        Some(registration.socket.unwrap_or(registration.registered_via))
    }

    /// The ACF of a routed call between registered phones: the caller's (or, for an
    /// `answerCall` ARQ, the callee's own) C-LAN's signalling address, callModel
    /// `gatekeeperRouted`. The caller's `callIdentifier` is kept to tell who sends its Setup.
    pub(super) fn routed_confirm(
        &mut self,
        now: Instant,
        asking: u64,
        answer_call: bool,
        call_identifier: [u8; 16],
        seq: u16,
        band_width: u32,
    ) -> Option<crate::ras::RasMessage> {
        let clan = self.call_clan(asking)?;
        if !answer_call {
            self.relay.admit(now, call_identifier, asking);
        }
        let family = self.registry.get(asking)?.family();
        let address = self.signal_address_for(clan, family);
        Some(crate::ras::reply::admission_confirm(
            seq, address, band_width, true,
        ))
    }

    /// Routed calls' counters.
    pub fn call_stats(&self) -> &super::relay::CallStats {
        &self.relay.stats
    }

    /// A whole TPKT frame's payload read on connection `id` (after
    /// [`received`](Gatekeeper::received) counted it). In routed mode it is read as Q.931:
    /// a Setup makes a call, any other message of a call goes to the call's other leg.
    /// An empty payload (a keep-alive) is nothing.
    pub fn frame(&mut self, now: Instant, id: ConnectionId, payload: &[u8]) {
        if !self.routed() || payload.is_empty() {
            return;
        }
        if self.owner(id).is_none() {
            return;
        }
        let message = match q931::Message::parse(payload) {
            Ok(message) => message,
            Err(error) => {
                tracing::debug!(connection = %id, %error, "no Q.931 message");
                self.relay.count_bad(BadSignal::Q931);
                return;
            }
        };
        let crv = message.call_reference;
        // Flag 0: the sender chose the value, so it is the caller of that call.
        let sender = if crv.from_destination {
            Side::Callee
        } else {
            Side::Caller
        };
        if let Some(&no) = self.relay.legs.get(&(id, crv.value, sender)) {
            if message.message_type == MessageType::Setup {
                self.relay.count_bad(BadSignal::RepeatedSetup);
                return;
            }
            self.relay_message(now, no, sender, message.message_type, payload);
            return;
        }
        if message.message_type != MessageType::Setup
            && self.relay.ended_lately(now, (id, crv.value, sender))
        {
            // What crossed the call's end (the other side's own Release Complete).
            self.relay.stats.late += 1;
            return;
        }
        match message.message_type {
            MessageType::Setup if sender == Side::Caller => {
                self.setup(now, id, crv.value, payload);
            }
            MessageType::ReleaseComplete => {
                // Nothing to end, and a Release Complete is never answered.
                self.relay.count_bad(BadSignal::UnknownCall);
            }
            _ => {
                self.relay.count_bad(BadSignal::UnknownCall);
                // Q.931 5.8.3.2: a message for a call reference no call has is answered
                // with Release Complete, cause 81 (invalid call reference value).
                self.write_release(id, crv.reversed(), None, Release::InvalidCallReference);
            }
        }
    }

    /// Who owns connection `id`, if the core knows it.
    fn owner(&self, id: ConnectionId) -> Option<Owner> {
        if let Some(&key) = self.signalling.connections.get(&id) {
            return Some(Owner::Socket(key));
        }
        self.relay
            .connections
            .get(&id)
            .map(|c| Owner::CallConnection(c.owner))
    }

    /// Writes one Q.931 message on a connection, framed. (Every message here is one read
    /// from a frame, or one of the gatekeeper's own few hundred octets, so it fits a frame.)
    fn write(&mut self, id: ConnectionId, payload: Bytes) {
        if let Ok(payload) = tpkt::frame(&payload) {
            self.signalling.commands.push(Command::Send { id, payload });
        }
    }

    /// Writes a Release Complete of the gatekeeper's own.
    fn write_release(
        &mut self,
        id: ConnectionId,
        crv: CallReference,
        call_identifier: Option<[u8; 16]>,
        reason: Release,
    ) {
        self.relay.stats.released += 1;
        let payload = q931::release_complete(crv, call_identifier, reason);
        self.write(id, payload);
    }

    /// A Setup (flag 0, a call reference no call has on `id`): who sent it, where it goes,
    /// and the callee's leg.
    fn setup(&mut self, now: Instant, id: ConnectionId, crv: u16, payload: &[u8]) {
        let reply = CallReference::to_originator(crv);
        let facts = match q931::facts(payload) {
            Ok((_, facts)) => facts,
            Err(error) => {
                tracing::debug!(connection = %id, %error, "Setup without readable UUIE");
                self.refuse_setup(id, reply, None, CallEnd::Malformed);
                return;
            }
        };
        let call_identifier = facts.call_identifier;
        let Some(caller) = self.setup_sender(now, id, &facts) else {
            self.refuse_setup(id, reply, call_identifier, CallEnd::Stranger);
            return;
        };
        let Some(caller_clan) = self.settle_owner(now, id, caller) else {
            self.refuse_setup(id, reply, call_identifier, CallEnd::NoRoom);
            return;
        };
        if self.relay.calls_as_caller(caller) >= MAX_CALLS_PER_PHONE {
            self.refuse_setup(id, reply, call_identifier, CallEnd::TooManyCalls);
            return;
        }
        let message = q931::Message::parse(payload).ok();
        let callee = facts
            .destination_aliases
            .iter()
            .find_map(|alias| self.registry.by_alias(alias))
            .or_else(|| {
                let digits = message.as_ref()?.called_party_number()?;
                self.registry.by_alias(&Alias::DialledDigits(digits))
            });
        let Some(callee) = callee else {
            self.refuse_setup(
                id,
                reply,
                call_identifier,
                CallEnd::CalledPartyNotRegistered,
            );
            return;
        };
        let no = self.relay.new_call();
        let call = RoutedCall {
            call_identifier: call_identifier.unwrap_or_default(),
            caller,
            callee,
            caller_leg: Leg {
                connection: id,
                crv,
                clan: caller_clan,
            },
            callee_leg: None,
            callee_clan: caller_clan,
            state: CallState::Setup,
            setup_at: now,
            connected_at: None,
            held: vec![Bytes::copy_from_slice(payload)],
            answer_by: now + self.config.gatekeeper.call_setup_timeout,
        };
        self.relay.insert(no, call);
        self.note_call_on(id);
        let busy = self.callee_busy(callee);
        let connection = if busy {
            // A standard endpoint takes one call per connection unless it says otherwise:
            // this call waits for its connection to close, then gets one of its own.
            self.relay.busy_for.entry(callee).or_default().push(no);
            Ok(None)
        } else {
            self.callee_connection(now, callee)
        };
        match connection {
            Ok(Some((connection, clan))) => self.attach_callee(no, connection, clan),
            Ok(None) => {
                if let Some(call) = self.relay.calls.get_mut(&no) {
                    call.callee_clan = self
                        .signalling
                        .phase(callee)
                        .clan()
                        .unwrap_or(call.callee_clan);
                }
                if !busy {
                    self.relay.waiting_for.entry(callee).or_default().push(no);
                }
            }
            Err(reason) => {
                self.end_call(now, no, reason);
                return;
            }
        }
        self.relay.stats.setups += 1;
        if self.events.watched() {
            let call = &self.relay.calls[&no];
            self.events.push(Event::CallSetup {
                call: no.0,
                caller: registry::endpoint_id_text(call.caller),
                callee: registry::endpoint_id_text(call.callee),
                clan: self.clan_name(caller_clan),
            });
        }
    }

    /// A Setup that makes no call: Release Complete back on its leg, counted; a call
    /// connection that carries no other call is closed after it.
    fn refuse_setup(
        &mut self,
        id: ConnectionId,
        reply: CallReference,
        call_identifier: Option<[u8; 16]>,
        reason: CallEnd,
    ) {
        tracing::debug!(connection = %id, reason = reason.name(), "Setup refused");
        self.relay.count_end(reason, false);
        if self.events.watched() {
            self.events.push(Event::CallEnded {
                call: 0,
                reason,
                duration_ms: 0,
            });
        }
        self.write_release(id, reply, call_identifier, release_of(reason));
        // A call connection is for calls: one that carries none after this closes.
        if self.relay.connections.contains_key(&id) && !self.relay.carries(id) {
            self.close_call_connection(id, false);
        }
    }

    /// The registered phone a Setup on `id` comes from: the one whose ARQ was confirmed
    /// for its `callIdentifier`, else its `endpointIdentifier`, else a source alias, else
    /// the owner of the connection — and only a phone whose addresses share the
    /// connection's IP (so that one phone cannot place calls as another).
    fn setup_sender(&self, now: Instant, id: ConnectionId, facts: &q931::Facts) -> Option<u64> {
        let registered = |key: u64| self.registry.get(key).is_some().then_some(key);
        let owner = match self.owner(id)? {
            Owner::Socket(key) => Some(key),
            Owner::CallConnection(owner) => owner,
        };
        let named = facts
            .call_identifier
            .and_then(|ci| self.relay.admitted_caller(now, &ci))
            .and_then(registered)
            .or_else(|| {
                facts
                    .endpoint_identifier
                    .as_deref()
                    .and_then(registry::key_of)
                    .and_then(registered)
            })
            .or_else(|| {
                facts
                    .source_aliases
                    .iter()
                    .find_map(|alias| self.registry.by_alias(alias))
            })
            .or(owner.and_then(registered))?;
        let ip = self.connection_ip(id)?;
        self.phone_ips(named).any(|at| at == ip).then_some(named)
    }

    /// The IP a connection comes from (or goes to): a call connection's source, a socket's
    /// phone's (its RAS source for one it opened, its call signalling address for one the
    /// gatekeeper opened — the same host either way for the check above).
    fn connection_ip(&self, id: ConnectionId) -> Option<IpAddr> {
        match self.owner(id)? {
            Owner::Socket(key) => self.signalling.phones.get(&key).map(|p| p.ip),
            Owner::CallConnection(_) => self.relay.connections.get(&id).map(|c| c.from),
        }
    }

    /// Every IP a registered phone uses: its RAS source and its call signalling addresses.
    fn phone_ips(&self, key: u64) -> impl Iterator<Item = IpAddr> + '_ {
        let registration = self.registry.get(key);
        let source = registration.map(|r| r.source.ip());
        let signal = registration
            .map(super::registry::Registration::call_signal_address)
            .into_iter()
            .flat_map(|addresses| (0..addresses.len()).map(move |at| addresses[at].ip()));
        source.into_iter().chain(signal)
    }

    /// Makes connection `id` carry `caller`'s calls, now that a Setup said whose it is; its
    /// C-LAN, or `None` when that needs a place the C-LAN does not have.
    ///
    /// A socket the source IP gave to another phone behind the same IP (docs/rules.md §8.3)
    /// goes to the caller when the caller waits for a socket at that C-LAN; the other phone
    /// gets its place back and waits. Otherwise the connection is the caller's call
    /// connection, with a place of its own.
    fn settle_owner(&mut self, now: Instant, id: ConnectionId, caller: u64) -> Option<ClanIdx> {
        match self.owner(id)? {
            Owner::Socket(key) if key == caller => self.signalling.phase(key).clan(),
            Owner::CallConnection(Some(key)) if key == caller => {
                self.relay.connections.get(&id).map(|c| c.clan)
            }
            Owner::CallConnection(Some(_)) => None,
            Owner::CallConnection(None) => {
                let connection = self.relay.connections.get_mut(&id)?;
                connection.owner = Some(caller);
                let (clan, deadline) = (connection.clan, connection.identify_by);
                self.relay
                    .timers
                    .remove(&(deadline, RelayTimer::Identify(id)));
                Some(clan)
            }
            Owner::Socket(other) => self.give_socket(now, id, other, caller),
        }
    }

    /// Connection `id`, `other`'s socket by its source IP, turns out to carry `caller`'s
    /// Setup (see [`settle_owner`](Self::settle_owner)).
    fn give_socket(
        &mut self,
        now: Instant,
        id: ConnectionId,
        other: u64,
        caller: u64,
    ) -> Option<ClanIdx> {
        let phase = self.signalling.phase(other);
        let clan = phase.clan()?;
        let waiting_at = |gk: &Gatekeeper, key: u64| {
            gk.registry
                .get(key)
                .filter(|r| !r.tts)
                .map(|r| (r.registered_via, r.source.ip()))
        };
        let caller_phase = self.signalling.phase(caller);
        let caller_at = waiting_at(self, caller);
        let takes_socket = match caller_phase {
            Phase::Waiting(at) => at == clan,
            Phase::None => caller_at.is_some_and(|(via, _)| via == clan),
            _ => false,
        };
        // A call connection always needs a place of its own; taking the socket over needs
        // one unless the caller already holds its place here, waiting. (The `relay` fuzz
        // target found the place of a caller waiting at another C-LAN taken for granted.)
        let needs_place = !takes_socket || !matches!(caller_phase, Phase::Waiting(_));
        if needs_place && !self.loads.get(clan).available() {
            return None;
        }
        // The other phone keeps its place, waiting for its own connection.
        let other_at = waiting_at(self, other);
        self.signalling
            .set_phase(other, Phase::Waiting(clan), other_at);
        if takes_socket {
            if needs_place {
                self.loads.add_socket(clan);
                if let Some(registration) = self.registry.get_mut(caller) {
                    registration.socket = Some(clan);
                }
            }
            self.signalling.set_phase(caller, phase, caller_at);
        } else {
            self.loads.add_socket(clan);
            let from = self
                .signalling
                .phones
                .get(&other)
                .map_or(IpAddr::from([0u8; 4]), |p| p.ip);
            self.relay.connections.insert(
                id,
                CallConnection {
                    clan,
                    owner: Some(caller),
                    from,
                    identify_by: now,
                },
            );
            self.relay.per_clan[clan] += 1;
            self.relay.stats.call_connections += 1;
        }
        tracing::debug!(
            connection = %id,
            from = %registry::endpoint_id_text(other),
            to = %registry::endpoint_id_text(caller),
            "connection re-attributed by its Setup"
        );
        Some(clan)
    }

    /// `callee` is a standard endpoint (not TTS, no service frame asked: it holds no socket
    /// for its registration) whose connection carries a call: its own, placed on the
    /// connection it opened for it, or one to it. H.225.0 puts a second call on a
    /// connection only when both ends say `multipleCalls`; a standard endpoint's Setup says
    /// FALSE, and H323Plus takes a Setup arriving on its own call's connection as part of
    /// that call (`rasgk exam` saw callgen323 ask admission for it as its outgoing call).
    fn callee_busy(&self, callee: u64) -> bool {
        let Phase::Established(_, id) = self.signalling.phase(callee) else {
            return false;
        };
        let standard = self
            .registry
            .get(callee)
            .is_some_and(|r| !r.tts && !self.writes_service_frame(r));
        standard && self.relay.carries(id)
    }

    /// Where a call to `callee` runs: `Ok(Some)` its established socket now; `Ok(None)` a
    /// connection on its way (its socket's set-up, or one opened now from its C-LAN for
    /// the call); `Err` why none can be had.
    fn callee_connection(
        &mut self,
        now: Instant,
        callee: u64,
    ) -> Result<Option<(ConnectionId, ClanIdx)>, CallEnd> {
        let registration = self
            .registry
            .get(callee)
            .ok_or(CallEnd::CalledPartyNotRegistered)?;
        let (tts, via, ip) = (
            registration.tts,
            registration.registered_via,
            registration.source.ip(),
        );
        match self.signalling.phase(callee) {
            Phase::Established(clan, id) => Ok(Some((id, clan))),
            Phase::Queued(_) | Phase::Connecting(..) | Phase::Setup(..) => Ok(None),
            Phase::Waiting(clan) => {
                // Its place waits for a connection: the gatekeeper opens it for the call.
                self.open_for_call(now, callee, clan, Some((clan, ip)));
                Ok(None)
            }
            Phase::None => {
                // No place: the connection the call needs takes one on its C-LAN.
                if !self.loads.get(via).available() {
                    return Err(CallEnd::NoRoom);
                }
                self.loads.add_socket(via);
                if let Some(registration) = self.registry.get_mut(callee) {
                    registration.socket = Some(via);
                }
                self.tts_pending.remove(&callee);
                let waiting_at = (!tts).then_some((via, ip));
                self.open_for_call(now, callee, via, waiting_at);
                Ok(None)
            }
        }
    }

    /// Queues a connection from `clan` to `callee` for a call: an establishment under the
    /// five-at-once rule, whose first message is the call's Setup (never a service frame).
    fn open_for_call(
        &mut self,
        now: Instant,
        callee: u64,
        clan: ClanIdx,
        waiting_at: Option<(ClanIdx, IpAddr)>,
    ) {
        if let Some(phone) = self.signalling.phones.get_mut(&callee) {
            phone.for_call = true;
        }
        self.signalling
            .set_phase(callee, Phase::Queued(clan), waiting_at);
        self.relay.stats.call_connections += 1;
        self.pump(now, clan);
    }

    /// The callee's leg of call `no` is up on `connection`: a call reference is chosen there
    /// and what was held for it (the Setup first) is written.
    fn attach_callee(&mut self, no: CallNo, connection: ConnectionId, clan: ClanIdx) {
        let crv = self.relay.new_crv(connection);
        let leg = Leg {
            connection,
            crv,
            clan,
        };
        let Some(call) = self.relay.calls.get_mut(&no) else {
            return;
        };
        call.callee_leg = Some(leg);
        call.callee_clan = clan;
        let held = std::mem::take(&mut call.held);
        self.relay.file_leg(no, Side::Callee, leg);
        self.note_call_on(connection);
        for payload in held {
            if let Ok(relayed) =
                q931::with_call_reference(&payload, CallReference::from_originator(crv))
            {
                self.relay.stats.relayed += 1;
                self.write(connection, relayed);
            }
        }
    }

    /// A call runs on connection `id`: when it is a phone's socket, the socket has been used
    /// (a TTS phone that closes it later has not declined it, docs/rules.md §8.6).
    fn note_call_on(&mut self, id: ConnectionId) {
        if let Some(key) = self.signalling.connections.get(&id) {
            if let Some(phone) = self.signalling.phones.get_mut(key) {
                phone.carried_call = true;
            }
        }
    }

    /// A phone's socket is established on `id` (docs/rules.md §8.4): the calls waiting for
    /// it get their callee legs there. `true` when it was opened for a call (then the call's
    /// Setup is the first thing written on it).
    pub(super) fn socket_up(&mut self, key: u64, id: ConnectionId, clan: ClanIdx) -> bool {
        let for_call = self.signalling.phones.get(&key).is_some_and(|p| p.for_call);
        if let Some(waiting) = self.relay.waiting_for.remove(&key) {
            for no in waiting {
                self.attach_callee(no, id, clan);
            }
        }
        for_call
    }

    /// A phone's socket (or its set-up) is gone (`how`): the calls on it end, and so do the
    /// calls that waited for it.
    pub(super) fn socket_gone(&mut self, now: Instant, key: u64, id: Option<ConnectionId>) {
        if !self.routed() {
            return;
        }
        if let Some(id) = id {
            for no in self.relay.calls_on(id) {
                self.end_call(now, no, CallEnd::DroppedLeg);
            }
        }
        if let Some(waiting) = self.relay.waiting_for.remove(&key) {
            for no in waiting {
                self.end_call(now, no, CallEnd::Unreachable);
            }
        }
        // The calls that waited for its busy connection get a connection of their own.
        for no in self.relay.busy_for.remove(&key).unwrap_or_default() {
            if !self.relay.calls.contains_key(&no) {
                continue;
            }
            match self.callee_connection(now, key) {
                Ok(Some((connection, clan))) => self.attach_callee(no, connection, clan),
                Ok(None) => self.relay.waiting_for.entry(key).or_default().push(no),
                Err(reason) => self.end_call(now, no, reason),
            }
        }
    }

    /// One message of call `no` from `sender`: its state follows, and it goes to the other
    /// leg with that leg's call reference (held while the callee's leg is not up).
    fn relay_message(
        &mut self,
        now: Instant,
        no: CallNo,
        sender: Side,
        message_type: MessageType,
        payload: &[u8],
    ) {
        let to = sender.other();
        let Some(call) = self.relay.calls.get_mut(&no) else {
            return;
        };
        if sender == Side::Callee {
            match message_type {
                MessageType::CallProceeding if call.state == CallState::Setup => {
                    call.state = CallState::Proceeding;
                }
                MessageType::Alerting if call.state != CallState::Connected => {
                    call.state = CallState::Alerting;
                }
                MessageType::Connect if call.state != CallState::Connected => {
                    call.state = CallState::Connected;
                    call.connected_at = Some(now);
                    let took = now.saturating_duration_since(call.setup_at);
                    let answer_by = call.answer_by;
                    self.relay.stats.connected += 1;
                    self.relay.stats.setup_to_connect.observe(took);
                    self.relay
                        .timers
                        .remove(&(answer_by, RelayTimer::NoAnswer(no)));
                    if self.events.watched() {
                        self.events.push(Event::CallConnected {
                            call: no.0,
                            setup_to_connect_us: took.as_micros().try_into().unwrap_or(u64::MAX),
                        });
                    }
                }
                _ => {}
            }
        }
        let call = &self.relay.calls[&no];
        let crv = match to {
            Side::Caller => CallReference::to_originator(call.caller_leg.crv),
            Side::Callee => CallReference::from_originator(call.callee_leg.map_or(0, |l| l.crv)),
        };
        match call.leg(to) {
            Some(leg) => {
                if let Ok(relayed) = q931::with_call_reference(payload, crv) {
                    self.relay.stats.relayed += 1;
                    self.write(leg.connection, relayed);
                }
            }
            None => {
                let call = self.relay.calls.get_mut(&no).expect("looked up above");
                if call.held.len() < MAX_HELD_FRAMES {
                    call.held.push(Bytes::copy_from_slice(payload));
                } else {
                    self.relay.count_bad(BadSignal::HeldOver);
                }
            }
        }
        if message_type == MessageType::ReleaseComplete {
            let reason = match sender {
                Side::Caller => CallEnd::CallerReleased,
                Side::Callee => CallEnd::CalleeReleased,
            };
            // Relayed already to the other side; the sender's leg is over by its own word.
            self.finish_call(now, no, reason, [false, false]);
        }
    }

    /// Ends call `no` for `reason`: Release Complete on both legs that are up, then its
    /// call connections close when they carry nothing else.
    pub(super) fn end_call(&mut self, now: Instant, no: CallNo, reason: CallEnd) {
        self.finish_call(now, no, reason, [true, true]);
    }

    /// Ends call `no`, writing Release Complete to the sides `notify` says (caller,
    /// callee).
    fn finish_call(&mut self, now: Instant, no: CallNo, reason: CallEnd, notify: [bool; 2]) {
        let Some(call) = self.relay.remove(no) else {
            return;
        };
        let release = release_of(reason);
        let ci = Some(call.call_identifier);
        if notify[0] && !self.leg_gone(call.caller_leg.connection, reason) {
            let crv = CallReference::to_originator(call.caller_leg.crv);
            self.write_release(call.caller_leg.connection, crv, ci, release);
        }
        if let Some(leg) = call.callee_leg {
            if notify[1] && !self.leg_gone(leg.connection, reason) {
                let crv = CallReference::from_originator(leg.crv);
                self.write_release(leg.connection, crv, ci, release);
            }
        }
        let answered = call.connected_at.is_some();
        self.relay.count_end(reason, answered);
        self.relay.note_ended(now, &call);
        tracing::debug!(
            call = no.0,
            reason = reason.name(),
            answered,
            "routed call ended"
        );
        if self.events.watched() {
            self.events.push(Event::CallEnded {
                call: no.0,
                reason,
                duration_ms: call.connected_at.map_or(0, |at| {
                    let connected = now.saturating_duration_since(at).as_millis();
                    connected.try_into().unwrap_or(u64::MAX)
                }),
            });
        }
        for leg in [Some(call.caller_leg), call.callee_leg]
            .into_iter()
            .flatten()
        {
            if self.relay.connections.contains_key(&leg.connection)
                && !self.relay.carries(leg.connection)
            {
                self.close_call_connection(leg.connection, false);
            }
        }
    }

    /// Is the connection of a leg already gone (so nothing can be written on it)?
    fn leg_gone(&self, id: ConnectionId, reason: CallEnd) -> bool {
        reason == CallEnd::DroppedLeg && self.owner(id).is_none()
    }

    /// Closes a call connection and frees its place.
    fn close_call_connection(&mut self, id: ConnectionId, reset: bool) {
        self.signalling.commands.push(Command::Close { id, reset });
        self.drop_call_connection(id);
    }

    /// Forgets a call connection (closed by either side) and frees its place.
    fn drop_call_connection(&mut self, id: ConnectionId) {
        let Some(connection) = self.relay.connections.remove(&id) else {
            return;
        };
        self.relay
            .timers
            .remove(&(connection.identify_by, RelayTimer::Identify(id)));
        self.loads.remove_socket(connection.clan);
        self.relay.per_clan[connection.clan] =
            self.relay.per_clan[connection.clan].saturating_sub(1);
    }

    /// Routed mode: a connection accepted on `clan` from `from` that no waiting phone
    /// claims is held as a call connection when a phone is registered from that IP and the
    /// C-LAN has room; it must show whose it is with a Setup within `setup_timeout_ms`.
    pub(super) fn accept_call_connection(
        &mut self,
        now: Instant,
        clan: ClanIdx,
        from: IpAddr,
    ) -> Result<ConnectionId, Refusal> {
        let phones = self.signalling.ips.get(&from).copied().unwrap_or(0) as usize;
        if phones == 0 {
            return Err(Refusal::Stranger);
        }
        let held = self
            .relay
            .connections
            .values()
            .filter(|c| c.from == from)
            .count();
        if held >= phones * CALL_CONNECTIONS_PER_PHONE {
            return Err(Refusal::Stranger);
        }
        if self.signalling.clans[clan].setups >= self.config.gatekeeper.max_setups_per_clan {
            return Err(Refusal::Busy);
        }
        if !self.loads.get(clan).available() {
            return Err(Refusal::NoRoom);
        }
        self.loads.add_socket(clan);
        let id = self.signalling.new_id();
        let identify_by = now + self.config.gatekeeper.setup_timeout;
        self.relay.connections.insert(
            id,
            CallConnection {
                clan,
                owner: None,
                from,
                identify_by,
            },
        );
        self.relay
            .timers
            .insert((identify_by, RelayTimer::Identify(id)));
        self.relay.per_clan[clan] += 1;
        self.relay.stats.call_connections += 1;
        Ok(id)
    }

    /// A call connection closed by the phone (or failed): its calls end and its place is
    /// freed. `false` when `id` is none.
    pub(super) fn call_connection_closed(&mut self, now: Instant, id: ConnectionId) -> bool {
        if !self.relay.connections.contains_key(&id) {
            return false;
        }
        self.drop_call_connection(id);
        for no in self.relay.calls_on(id) {
            self.end_call(now, no, CallEnd::DroppedLeg);
        }
        true
    }

    /// Every call of a phone whose registration ends, ended for `reason` (before its socket
    /// closes, so its Release Complete goes first).
    pub(super) fn end_calls_of(&mut self, now: Instant, key: u64, reason: CallEnd) {
        let calls: Vec<CallNo> = self
            .relay
            .of_phone
            .get(&key)
            .map_or_else(Vec::new, |calls| calls.iter().copied().collect());
        for no in calls {
            self.end_call(now, no, reason);
        }
        self.relay.waiting_for.remove(&key);
        self.relay.busy_for.remove(&key);
    }

    /// A DRQ of a registered phone for `call_identifier`: its routed call, if it is a party
    /// to one, ends on both legs.
    pub(super) fn disengage_routed(&mut self, now: Instant, key: u64, call_identifier: [u8; 16]) {
        let Some(&no) = self.relay.by_call_identifier.get(&call_identifier) else {
            return;
        };
        let party = self
            .relay
            .calls
            .get(&no)
            .is_some_and(|c| c.caller == key || c.callee == key);
        if party {
            self.end_call(now, no, CallEnd::Disengaged);
        }
    }

    /// A C-LAN leaves service: every call with a leg on it (or a callee leg on its way
    /// there) ends, and its call connections close.
    pub(super) fn clan_calls_end(&mut self, now: Instant, clan: ClanIdx) {
        let mut calls: Vec<CallNo> = self
            .relay
            .calls
            .iter()
            .filter(|(_, c)| {
                c.caller_leg.clan == clan
                    || c.callee_leg
                        .map_or(c.callee_clan == clan, |l| l.clan == clan)
            })
            .map(|(&no, _)| no)
            .collect();
        calls.sort_unstable();
        for no in calls {
            self.end_call(now, no, CallEnd::ClanOutOfService);
        }
        let connections: Vec<ConnectionId> = self
            .relay
            .connections
            .iter()
            .filter(|(_, c)| c.clan == clan)
            .map(|(&id, _)| id)
            .collect();
        for id in connections {
            self.signalling.count_closed(Closing::ClanOutOfService);
            self.close_call_connection(id, false);
        }
    }

    /// The relay's deadlines due at `now`: calls not answered in time, call connections
    /// that did not show whose they are.
    pub(super) fn relay_timeouts(&mut self, now: Instant) {
        while let Some(&(at, timer)) = self.relay.timers.first() {
            if at > now {
                break;
            }
            self.relay.timers.pop_first();
            match timer {
                RelayTimer::NoAnswer(no) => {
                    if self
                        .relay
                        .calls
                        .get(&no)
                        .is_some_and(|c| c.connected_at.is_none())
                    {
                        self.end_call(now, no, CallEnd::NoAnswer);
                    }
                }
                RelayTimer::Identify(id) => {
                    let unknown = self
                        .relay
                        .connections
                        .get(&id)
                        .is_some_and(|c| c.owner.is_none());
                    if unknown {
                        self.relay.count_bad(BadSignal::Unidentified);
                        self.close_call_connection(id, true);
                    }
                }
            }
        }
    }

    /// The soonest deadline of the relay.
    pub(super) fn relay_next_timer(&self) -> Option<Instant> {
        self.relay.next_timer()
    }
}

/// What a Release Complete of the gatekeeper's says for each ending.
fn release_of(reason: CallEnd) -> Release {
    match reason {
        CallEnd::NoAnswer => Release::NoAnswer,
        CallEnd::CalledPartyNotRegistered => Release::CalledPartyNotRegistered,
        CallEnd::Stranger => Release::CallerNotRegistered,
        CallEnd::Unreachable | CallEnd::DroppedLeg => Release::Unreachable,
        CallEnd::NoRoom | CallEnd::TooManyCalls => Release::GatekeeperResources,
        CallEnd::Malformed => Release::InvalidMessage,
        CallEnd::CallerReleased
        | CallEnd::CalleeReleased
        | CallEnd::Disengaged
        | CallEnd::Unregistered
        | CallEnd::ClanOutOfService => Release::NormalClearing,
    }
}
