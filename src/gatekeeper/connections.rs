//! The gatekeeper's side of socket mode: what it does when the glue reports a connection
//! event, and how registrations, unregistrations and C-LAN faults move the phones' sockets
//! ([`signalling`](super::signalling) holds the state and the rules' words).

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;

use super::events::Event;
use super::registry;
use super::signalling::{
    Closing, Command, ConnectionId, Phase, PhoneSocket, Refusal, SocketState, SocketTimer,
    TTS_BACKOFF_FIRST, TTS_BACKOFF_MAX,
};
use super::topology::ClanIdx;
use super::{policy, Gatekeeper};
use crate::config::SocketMode;
use crate::tpkt::{self, FrameError};
use std::time::Duration;

impl Gatekeeper {
    /// Does this gatekeeper hold real sockets (`sockets = "tcp"`)?
    pub fn socket_mode(&self) -> bool {
        self.config.gatekeeper.sockets == SocketMode::Tcp
    }

    /// Every C-LAN's signalling address with its name, in configuration order: where the
    /// glue listens in socket mode.
    pub fn signal_addresses(&self) -> Vec<(SocketAddr, String)> {
        self.config
            .clans
            .iter()
            .flat_map(|clan| {
                clan.signal_addresses()
                    .map(move |address| (address, clan.name.clone()))
            })
            .collect()
    }

    /// Takes what the glue must do with connections, oldest first.
    pub fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.signalling.commands)
    }

    /// Where a registration's socket stands.
    pub fn socket_state(&self, key: u64) -> SocketState {
        if self.socket_mode() {
            match self.signalling.phones.get(&key) {
                Some(phone) if phone.declined && phone.state == Phase::None => {
                    SocketState::Declined
                }
                _ => self.signalling.phase(key).state(),
            }
        } else if self.registry.get(key).is_some_and(|r| r.socket.is_some()) {
            SocketState::Counted
        } else {
            SocketState::None
        }
    }

    /// How many sockets a registration declined (docs/rules.md §8.6).
    pub fn socket_declines(&self, key: u64) -> u32 {
        self.signalling.phones.get(&key).map_or(0, |p| p.declines)
    }

    /// TTS phones whose last socket was declined and that wait for their next round.
    pub fn declining_phones(&self) -> usize {
        self.signalling
            .phones
            .values()
            .filter(|p| p.declined && p.state == Phase::None)
            .count()
    }

    /// Socket mode's counters.
    pub fn socket_stats(&self) -> &super::SocketStats {
        &self.signalling.stats
    }

    /// Counts a connection the glue refused by itself (out of file descriptors).
    pub fn refused(&mut self, reason: Refusal) {
        self.signalling.refuse(reason);
    }

    /// A connection was accepted on `local` (a C-LAN's signalling address) from `from`: it
    /// is kept as the socket of the phone it is attributed to (module doc of
    /// [`signalling`](super::signalling)), or refused and must be reset at once.
    pub fn accept(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
    ) -> Result<ConnectionId, Refusal> {
        let outcome = self.attribute(now, local, from);
        if let Err(reason) = outcome {
            tracing::debug!(%local, %from, reason = reason.name(), "connection refused");
            self.signalling.refuse(reason);
        }
        outcome
    }

    fn attribute(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
    ) -> Result<ConnectionId, Refusal> {
        if !self.socket_mode() {
            return Err(Refusal::CountMode);
        }
        let from_ip = from.ip().to_canonical();
        let clan = *self
            .signalling
            .clan_at
            .get(&local)
            .ok_or(Refusal::Stranger)?;
        let Some((key, holds_place)) = self.signalling.claimant(clan, from_ip) else {
            // Routed calls: a phone may open a connection beyond its socket to place a
            // call (docs/rules.md §8.7); its Setup says whose it is.
            if self.routed() {
                return self.accept_call_connection(now, clan, from_ip);
            }
            return Err(Refusal::Stranger);
        };
        let max = self.config.gatekeeper.max_setups_per_clan;
        if self.signalling.clans[clan].setups >= max {
            return Err(Refusal::Busy);
        }
        if !holds_place {
            if !self.loads.get(clan).available() {
                return Err(Refusal::NoRoom);
            }
            self.loads.add_socket(clan);
            if let Some(registration) = self.registry.get_mut(key) {
                registration.socket = Some(clan);
            }
        }
        let id = self.signalling.new_id();
        let until = now + self.config.gatekeeper.setup;
        self.signalling
            .set_phase(key, Phase::Setup(clan, id, until), Some((clan, from_ip)));
        self.begin_setup(now, key, id, until);
        Ok(id)
    }

    /// An establishment of `key` on connection `id` runs until `until`.
    fn begin_setup(&mut self, now: Instant, key: u64, id: ConnectionId, until: Instant) {
        if until <= now {
            self.establish(now, key);
        } else {
            self.signalling
                .timers
                .insert((until, SocketTimer::SetupDone(id)));
        }
    }

    /// A TTS connect completed.
    pub fn connected(&mut self, now: Instant, id: ConnectionId) {
        if self.released(now, id) {
            // Given up on already: its Close is on its way.
            return;
        }
        let Some(&key) = self.signalling.connections.get(&id) else {
            return;
        };
        let Phase::Connecting(clan, _, deadline) = self.signalling.phase(key) else {
            return;
        };
        self.signalling
            .timers
            .remove(&(deadline, SocketTimer::ConnectTimeout(id)));
        let until = now + self.config.gatekeeper.setup;
        self.signalling
            .set_phase(key, Phase::Setup(clan, id, until), None);
        self.begin_setup(now, key, id, until);
    }

    /// An abandoned connect's socket is gone: its slot goes to the next set-up.
    fn released(&mut self, now: Instant, id: ConnectionId) -> bool {
        match self.signalling.release(id) {
            Some(clan) => {
                self.pump(now, clan);
                true
            }
            None => false,
        }
    }

    /// A TTS connect was refused or failed (or, given up on, its socket is gone): the next
    /// candidate, or a later round.
    pub fn connect_failed(&mut self, now: Instant, id: ConnectionId) {
        if self.released(now, id) {
            return;
        }
        let Some(&key) = self.signalling.connections.get(&id) else {
            return;
        };
        if let Phase::Connecting(_, _, deadline) = self.signalling.phase(key) {
            self.signalling
                .timers
                .remove(&(deadline, SocketTimer::ConnectTimeout(id)));
            self.attempt_failed(now, key, Closing::ConnectFailed);
        }
    }

    /// The phone's side closed connection `id` (or the connection failed under it).
    pub fn closed(&mut self, now: Instant, id: ConnectionId, how: Closing) {
        if self.released(now, id) {
            return;
        }
        if self.call_connection_closed(now, id) {
            self.signalling.count_closed(how);
            return;
        }
        let Some(&key) = self.signalling.connections.get(&id) else {
            return;
        };
        match self.signalling.phase(key) {
            Phase::Connecting(_, _, deadline) => {
                self.signalling
                    .timers
                    .remove(&(deadline, SocketTimer::ConnectTimeout(id)));
                self.attempt_failed(now, key, Closing::ConnectFailed);
            }
            phase => {
                if let Phase::Setup(_, _, until) = phase {
                    self.signalling
                        .timers
                        .remove(&(until, SocketTimer::SetupDone(id)));
                }
                self.socket_lost(now, key, how);
            }
        }
    }

    /// Octets read on connection `id`, as its TPKT reader judged them: counted, and a bad
    /// frame closes the connection (reset) — a phone's socket, whose place is freed, or a
    /// call connection (docs/rules.md §8.7), whose calls end.
    pub fn received(
        &mut self,
        now: Instant,
        id: ConnectionId,
        read: Result<tpkt::Read, FrameError>,
    ) {
        let socket = self.signalling.connections.get(&id).copied();
        if socket.is_none() && !self.relay.connections.contains_key(&id) {
            return;
        }
        let error = match read {
            Ok(read) => {
                self.signalling.stats.octets += read.octets as u64;
                self.signalling.stats.frames += read.frames as u64;
                return;
            }
            Err(error) => error,
        };
        tracing::debug!(connection = %id, %error, "bad frame: connection closed");
        self.signalling
            .commands
            .push(Command::Close { id, reset: true });
        match socket {
            Some(key) => {
                if let Phase::Setup(_, _, until) = self.signalling.phase(key) {
                    self.signalling
                        .timers
                        .remove(&(until, SocketTimer::SetupDone(id)));
                }
                self.socket_lost(now, key, Closing::Frame);
            }
            None => {
                self.signalling.count_closed(Closing::Frame);
                self.call_connection_closed(now, id);
            }
        }
    }

    /// An establishment completed: the place becomes an established socket, and the C-LAN's
    /// slot goes to the next TTS set-up. Only a phone that asked for it is told with the
    /// service frame, an empty TPKT frame (docs/rules.md §8.4): nothing else is written on a
    /// socket but the Q.931 messages of its calls.
    fn establish(&mut self, now: Instant, key: u64) {
        let Phase::Setup(clan, id, _) = self.signalling.phase(key) else {
            return;
        };
        self.signalling
            .set_phase(key, Phase::Established(clan, id), None);
        self.signalling.stats.established += 1;
        let for_call = self.signalling.phones.get(&key).is_some_and(|p| p.for_call);
        let (tts, service_frame) = self
            .registry
            .get(key)
            .map_or((false, false), |r| (r.tts, self.writes_service_frame(r)));
        if service_frame && !for_call {
            self.signalling.commands.push(Command::Send {
                id,
                payload: Bytes::from_static(&tpkt::EMPTY),
            });
            self.signalling.stats.service_frames += 1;
        }
        if let Some(phone) = self.signalling.phones.get_mut(&key) {
            phone.carried_call = false;
        }
        // Routed calls waiting for this socket get their callee legs on it (after the
        // service frame, if any).
        self.socket_up(key, id, clan);
        // A connection opened for a call is no socket the phone took or declined: it neither
        // measures time to service nor clears a decline.
        if let Some(phone) = self.signalling.phones.get_mut(&key).filter(|_| !for_call) {
            if let Some(rcf) = phone.since_rcf.take() {
                let histogram = if tts {
                    &mut self.signalling.stats.time_to_service_tts
                } else {
                    &mut self.signalling.stats.time_to_service_other
                };
                histogram.observe(now.saturating_duration_since(rcf));
            }
            phone.tried.clear();
            phone.established_at = Some(now);
            phone.declined = false;
        }
        if self.events.watched() {
            self.events.push(Event::SocketEstablished {
                endpoint_id: registry::endpoint_id_text(key),
                clan: self.clan_name(clan),
            });
        }
        self.pump(now, clan);
    }

    /// A phone's socket (or establishment) is gone from under it: its place is freed at
    /// once and it stays registered without one; a non-TTS phone may connect again, a TTS
    /// phone is set up again.
    ///
    /// A TTS phone that closes its socket without having used it has declined it
    /// (docs/rules.md §8.6): it waits for its next back-off round instead of being set up
    /// again at once, which would send a standard endpoint dozens of connections a second.
    /// A socket it used resets its back-off.
    fn socket_lost(&mut self, now: Instant, key: u64, how: Closing) {
        let service_frame = self
            .registry
            .get(key)
            .is_some_and(|r| self.writes_service_frame(r));
        let used = self
            .signalling
            .phones
            .get(&key)
            .map_or(Used::NotUp, |p| match p.state {
                Phase::Established(..) if p.for_call => Used::ForCall,
                Phase::Established(..) => Used::Up {
                    held: p
                        .established_at
                        .map_or(Duration::ZERO, |at| now.saturating_duration_since(at)),
                    carried_call: p.carried_call,
                },
                _ if p.for_call => Used::ForCall,
                _ => Used::NotUp,
            });
        let connection = self.signalling.phase(key).connection();
        let Some((clan, tts)) = self.free_place(key, how) else {
            return;
        };
        // The routed calls on it, or waiting for it, end.
        self.socket_gone(now, key, connection);
        if self.events.watched() {
            self.events.push(Event::SocketClosed {
                endpoint_id: registry::endpoint_id_text(key),
                clan: self.clan_name(clan),
                reason: how,
            });
        }
        let by_phone = matches!(how, Closing::Fin | Closing::Reset);
        let declined = tts && by_phone && declined(used, service_frame);
        let declining = self.signalling.phones.get(&key).is_some_and(|p| p.declined);
        if declined {
            self.declined(now, key, clan, used);
        } else if tts && used == Used::ForCall && declining {
            // A standard endpoint's call connection closed after its call: it goes on with
            // the back-off its declines set.
            self.back_off(now, key);
        } else if tts {
            if let Some(phone) = self.signalling.phones.get_mut(&key) {
                phone.backoff = TTS_BACKOFF_FIRST;
            }
            self.start_tts_round(now, key);
        }
        self.pump(now, clan);
    }

    /// A TTS phone declined its socket on `clan`: counted, logged once per registration,
    /// and set up again after its back-off round.
    fn declined(&mut self, now: Instant, key: u64, clan: ClanIdx, used: Used) {
        self.signalling.stats.declines += 1;
        let Some(phone) = self.signalling.phones.get_mut(&key) else {
            return;
        };
        phone.declines += 1;
        phone.declined = true;
        phone.tried.clear();
        if phone.declines == 1 {
            let held = match used {
                Used::Up { held, .. } => held,
                _ => Duration::ZERO,
            };
            tracing::info!(
                endpoint_id = %registry::endpoint_id_text(key),
                clan = %self.config.clans[clan].name,
                held_ms = held.as_millis() as u64,
                "TTS phone declined its socket (closed it before any call ran on it, as a \
                 standard H.323 endpoint closes a call-signalling connection that brings no \
                 Setup); set up again after back-off rounds"
            );
        }
        self.back_off(now, key);
    }

    /// A TTS attempt on its C-LAN ended without a socket: the place there is freed, and the
    /// next candidate of docs/rules.md §7.1 (one not tried in this round) is queued, or the phone
    /// waits for its next round.
    fn attempt_failed(&mut self, now: Instant, key: u64, how: Closing) {
        let connection = self.signalling.phase(key).connection();
        let Some((clan, tts)) = self.free_place(key, how) else {
            return;
        };
        // Routed calls waiting for this connection fail.
        self.socket_gone(now, key, connection);
        if !tts {
            // A connection opened to a non-TTS phone for a call: the phone stays registered
            // without a place, and may connect by itself.
            self.pump(now, clan);
            return;
        }
        if let Some(phone) = self.signalling.phones.get_mut(&key) {
            phone.tried.push(clan);
        }
        if !self.queue_tts(now, key) {
            self.unreachable(key, how);
            self.back_off(now, key);
        }
        self.pump(now, clan);
    }

    /// A TTS phone's connects failed from every candidate C-LAN of this round (`how`): the
    /// phone is gone or not listening. That is no decline (docs/rules.md §8.6): it waits for
    /// its back-off rounds, said once per registration.
    fn unreachable(&mut self, key: u64, how: Closing) {
        let Some(phone) = self.signalling.phones.get_mut(&key) else {
            return;
        };
        if std::mem::replace(&mut phone.unreachable_logged, true) {
            return;
        }
        let to = self
            .registry
            .get(key)
            .and_then(|r| r.call_signal_address().first().copied());
        let why = match how {
            Closing::ConnectTimedOut => "not answered in time",
            _ => "refused or unreachable",
        };
        tracing::info!(
            endpoint_id = %registry::endpoint_id_text(key),
            call_signal_address = ?to,
            "TTS phone's socket cannot be opened from any C-LAN of its AGL (connect {why}: the \
             phone is gone or not listening); set up again after back-off rounds"
        );
    }

    /// Frees the place a phone's socket (or set-up) held, counting why it ended: the phone
    /// is left registered without a place, a non-TTS phone free to connect again. Its C-LAN
    /// and whether it is TTS; `None` when it held no place.
    fn free_place(&mut self, key: u64, how: Closing) -> Option<(ClanIdx, bool)> {
        let clan = self.signalling.phase(key).clan()?;
        self.signalling.count_closed(how);
        let (tts, waiting_at) = match self.registry.get_mut(key) {
            Some(registration) => {
                registration.socket = None;
                let at = (!registration.tts)
                    .then_some((registration.registered_via, registration.source.ip()));
                (registration.tts, at)
            }
            None => (false, None),
        };
        self.loads.remove_socket(clan);
        self.signalling.set_phase(key, Phase::None, waiting_at);
        if let Some(phone) = self.signalling.phones.get_mut(&key) {
            phone.for_call = false;
        }
        Some((clan, tts))
    }

    /// Socket mode: the place of a non-TTS phone that has just registered at `clan` (already
    /// counted) waits for the phone's connection.
    pub(super) fn await_connection(&mut self, now: Instant, key: u64, clan: ClanIdx) {
        let Some(ip) = self.registry.get(key).map(|r| r.source.ip()) else {
            return;
        };
        self.signalling
            .add_phone(key, PhoneSocket::new(Some(now), ip));
        self.signalling
            .set_phase(key, Phase::Waiting(clan), Some((clan, ip)));
    }

    /// Socket mode: a TTS phone that has just registered is set up (docs/rules.md §8.4).
    pub(super) fn await_tts_setup(&mut self, now: Instant, key: u64) {
        self.add_tts_phone(key, Some(now));
        self.start_tts_round(now, key);
    }

    /// Takes in a TTS phone that has just registered (or was restored).
    fn add_tts_phone(&mut self, key: u64, since_rcf: Option<Instant>) {
        let ip = self
            .registry
            .get(key)
            .map_or(std::net::IpAddr::from([0u8; 4]), |r| r.source.ip());
        self.signalling
            .add_phone(key, PhoneSocket::new(since_rcf, ip));
    }

    /// A fresh round of a TTS phone's set-up: every candidate may be tried again.
    fn start_tts_round(&mut self, now: Instant, key: u64) {
        if let Some(phone) = self.signalling.phones.get_mut(&key) {
            phone.tried.clear();
        }
        if !self.queue_tts(now, key) {
            // No entry of its AGL has room: the retry of TTS phones without a socket
            // (`tts_pending`) takes it from here, as in count mode.
            self.tts_pending.insert(key);
            if self.tts_retry_at.is_none() {
                self.tts_retry_at = Some(now + super::TTS_RETRY);
            }
        }
    }

    /// Queues a TTS phone's set-up on the best candidate of docs/rules.md §7.1 it has not tried in
    /// this round, holding its place there; `false` when none is left.
    fn queue_tts(&mut self, now: Instant, key: u64) -> bool {
        let Some(registration) = self.registry.get(key) else {
            return false;
        };
        let tried = self
            .signalling
            .phones
            .get(&key)
            .map_or(&[][..], |p| &p.tried[..]);
        let tiers = self.topology.tiers(registration.region);
        let Some(clan) =
            policy::choose_tts_clan_except(&tiers, &self.loads, &registration.agl, tried)
        else {
            return false;
        };
        self.place_tts_setup(now, key, clan);
        true
    }

    /// Holds a TTS phone's place on `clan` and queues its set-up there.
    pub(super) fn place_tts_setup(&mut self, now: Instant, key: u64, clan: ClanIdx) {
        self.loads.add_socket(clan);
        if let Some(registration) = self.registry.get_mut(key) {
            registration.socket = Some(clan);
        }
        self.tts_pending.remove(&key);
        self.signalling.set_phase(key, Phase::Queued(clan), None);
        self.pump(now, clan);
    }

    /// A TTS phone whose every candidate failed in this round waits, doubling each time.
    pub(super) fn back_off(&mut self, now: Instant, key: u64) {
        if let Some(phone) = self.signalling.phones.get_mut(&key) {
            let wait = phone.backoff;
            phone.backoff = (wait * 2).min(TTS_BACKOFF_MAX);
            self.signalling
                .timers
                .insert((now + wait, SocketTimer::Retry(key)));
        }
    }

    /// Starts the TTS set-ups waiting on `clan` while it has free establishment slots.
    pub(super) fn pump(&mut self, now: Instant, clan: ClanIdx) {
        // Nothing starts from a C-LAN out of service: while it is being drained, a phone
        // unregistered there frees a slot before the phones queued behind it are gone (the
        // `relay` fuzz target found such a connect).
        if !self.loads.get(clan).in_service {
            return;
        }
        let max = self.config.gatekeeper.max_setups_per_clan;
        let timeout = self.config.gatekeeper.setup_timeout;
        while self.signalling.clans[clan].setups < max {
            let Some(key) = self.signalling.clans[clan].queue.pop_front() else {
                break;
            };
            if self.signalling.phase(key) != Phase::Queued(clan) {
                continue;
            }
            let to = self
                .registry
                .get(key)
                .and_then(|r| r.call_signal_address().first().copied());
            let Some(to) = to else {
                continue;
            };
            // From the C-LAN's address of the phone's family (docs/rules.md §17).
            let from = self
                .ras_address(clan, crate::config::Family::of(to.ip()))
                .ip();
            let id = self.signalling.new_id();
            let deadline = now + timeout;
            self.signalling
                .set_phase(key, Phase::Connecting(clan, id, deadline), None);
            self.signalling
                .timers
                .insert((deadline, SocketTimer::ConnectTimeout(id)));
            // (A connection opened for a routed call is counted with the calls.)
            if !self.signalling.phones.get(&key).is_some_and(|p| p.for_call) {
                self.signalling.stats.connects += 1;
            }
            self.signalling
                .commands
                .push(Command::Connect { id, from, to });
        }
    }

    /// Socket mode's deadlines due at `now`.
    pub(super) fn socket_timeouts(&mut self, now: Instant) {
        while let Some(&(at, timer)) = self.signalling.timers.first() {
            if at > now {
                break;
            }
            self.signalling.timers.pop_first();
            match timer {
                SocketTimer::SetupDone(id) => {
                    if let Some(&key) = self.signalling.connections.get(&id) {
                        self.establish(now, key);
                    }
                }
                SocketTimer::ConnectTimeout(id) => {
                    let Some(&key) = self.signalling.connections.get(&id) else {
                        continue;
                    };
                    if let Phase::Connecting(clan, ..) = self.signalling.phase(key) {
                        self.signalling
                            .commands
                            .push(Command::Close { id, reset: true });
                        self.signalling.abandon(id, clan);
                        self.attempt_failed(now, key, Closing::ConnectTimedOut);
                    }
                }
                SocketTimer::Retry(key) => {
                    if self.registry.get(key).is_some()
                        && self.signalling.phase(key) == Phase::None
                        && !self.tts_pending.contains(&key)
                    {
                        self.start_tts_round(now, key);
                    }
                }
            }
        }
    }

    /// A registration ended (its place already freed from the C-LAN's load): its
    /// connection is closed and socket mode forgets it.
    pub(super) fn socket_ended(
        &mut self,
        now: Instant,
        key: u64,
        registration: &registry::Registration,
        how: Closing,
    ) {
        if !self.socket_mode() {
            return;
        }
        let waiting_at =
            (!registration.tts).then_some((registration.registered_via, registration.source.ip()));
        let phase = self.signalling.forget(key, waiting_at);
        if let Some(id) = phase.connection() {
            self.signalling
                .commands
                .push(Command::Close { id, reset: false });
            self.signalling.count_closed(how);
        }
        if let Phase::Connecting(clan, id, _) = phase {
            self.signalling.abandon(id, clan);
        }
        if let Some(clan) = phase.clan() {
            self.pump(now, clan);
        }
    }

    /// Socket mode, after a restore (or a reload that changed the C-LANs): no connection
    /// survived, so every registration's place waits for its socket again — a non-TTS
    /// phone's connection, a TTS phone's set-up. No time to service is measured for them.
    pub(super) fn adopt_places(&mut self, now: Instant) {
        if !self.socket_mode() {
            return;
        }
        let places: Vec<(u64, Option<ClanIdx>, bool)> = self
            .registry
            .iter()
            .map(|(key, r)| (key, r.socket, r.tts))
            .collect();
        for (key, socket, tts) in places {
            match (tts, socket) {
                (false, Some(clan)) => self.await_connection(now, key, clan),
                (true, Some(clan)) => {
                    self.await_tts_setup_at(now, key, clan);
                }
                (true, None) => self.await_tts_setup(now, key),
                (false, None) => continue,
            }
            if let Some(phone) = self.signalling.phones.get_mut(&key) {
                phone.since_rcf = None;
            }
        }
    }

    /// Socket mode, a reload: the connections of `old` carry over when the C-LANs are the
    /// same (names and signalling addresses, in order); otherwise they are all closed and
    /// the places wait for their sockets again ([`adopt_places`](Self::adopt_places)).
    pub(super) fn carry_connections(&mut self, now: Instant, old: &mut Gatekeeper) {
        let same = old.socket_mode()
            && self.socket_mode()
            && old.signal_addresses() == self.signal_addresses();
        if same {
            let mut signalling = std::mem::take(&mut old.signalling);
            signalling.stats = std::mem::take(&mut old.signalling.stats);
            self.signalling = signalling;
            // Routed calls carry over with their connections; their places are in the loads
            // the reload adopted.
            self.relay = std::mem::take(&mut old.relay);
            let clans: Vec<ClanIdx> = self.relay.connections.values().map(|c| c.clan).collect();
            for clan in clans {
                self.loads.add_socket(clan);
            }
            // Registrations the reload dropped lose their connections.
            let gone: Vec<u64> = self
                .signalling
                .phones
                .keys()
                .copied()
                .filter(|&key| self.registry.get(key).is_none())
                .collect();
            for key in gone {
                let phase = self.signalling.forget(key, None);
                if let Some(id) = phase.connection() {
                    self.signalling
                        .commands
                        .push(Command::Close { id, reset: false });
                    self.signalling.count_closed(Closing::Unregistered);
                }
            }
            let registry = &self.registry;
            self.signalling
                .waiting
                .retain(|&(_, _, key)| registry.get(key).is_some());
            return;
        }
        let mut ids: Vec<ConnectionId> = old.signalling.connections.keys().copied().collect();
        ids.extend(old.relay.connections.keys().copied());
        self.signalling.stats = std::mem::take(&mut old.signalling.stats);
        self.relay.stats = std::mem::take(&mut old.relay.stats);
        for id in ids {
            self.signalling
                .commands
                .push(Command::Close { id, reset: false });
            self.signalling.count_closed(Closing::Unregistered);
        }
        self.adopt_places(now);
    }

    /// A TTS phone whose place is already counted on `clan` (restored) waits for its
    /// set-up there.
    fn await_tts_setup_at(&mut self, now: Instant, key: u64, clan: ClanIdx) {
        self.add_tts_phone(key, None);
        self.signalling.set_phase(key, Phase::Queued(clan), None);
        self.pump(now, clan);
    }

    /// Registered non-TTS phones without a place that registered at `clan` (for a C-LAN
    /// going out of service: they can never connect there).
    pub(super) fn without_place_at(&self, clan: ClanIdx) -> Vec<u64> {
        self.signalling
            .waiting
            .range((clan, std::net::IpAddr::from([0u8; 4]), 0)..)
            .take_while(|&&(at, _, _)| at == clan)
            .filter(|&&(_, _, key)| self.signalling.phase(key) == Phase::None)
            .map(|&(_, _, key)| key)
            .collect()
    }
}

/// What a phone's socket had been when it closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Used {
    /// Not established: a set-up that ended early.
    NotUp,
    /// A connection the gatekeeper opened for a call to the phone (docs/rules.md §8.7).
    ForCall,
    /// An established socket, held this long, with or without a call on it.
    Up { held: Duration, carried_call: bool },
}

/// Did a TTS phone that closed its socket itself decline it (docs/rules.md §8.6)?
///
/// A standard endpoint (it did not ask for the service frame) takes a call-signalling
/// connection only for a call: closing one that carried none — at once, or after its idle
/// read timeout (H323Plus: 15 s) — is a decline, however long it was held. A phone that asked
/// for the service frame holds its socket for its registration, as Avaya's phones do: a socket
/// it closes is lost, never declined, and is set up again at once.
fn declined(used: Used, service_frame: bool) -> bool {
    !service_frame
        && matches!(
            used,
            Used::Up {
                carried_call: false,
                ..
            }
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standard_endpoint_declines_any_socket_it_closes_without_a_call() {
        for held in [
            Duration::ZERO,
            Duration::from_secs(15),
            Duration::from_secs(3600),
        ] {
            let idle = Used::Up {
                held,
                carried_call: false,
            };
            assert!(declined(idle, false), "held {held:?}");
            let used = Used::Up {
                held,
                carried_call: true,
            };
            assert!(!declined(used, false), "held {held:?} with a call");
        }
        assert!(!declined(Used::ForCall, false));
        assert!(!declined(Used::NotUp, false));
    }

    #[test]
    fn a_phone_that_asked_for_the_service_frame_never_declines() {
        for held in [
            Duration::ZERO,
            Duration::from_millis(10),
            Duration::from_secs(15),
        ] {
            for carried_call in [false, true] {
                let up = Used::Up { held, carried_call };
                assert!(!declined(up, true), "held {held:?}, a call {carried_call}");
            }
        }
    }
}
