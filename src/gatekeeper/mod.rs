//! The gatekeeper's protocol core: every rule of docs/rules.md §2–9 and §11–13, with no I/O.
//!
//! ```text
//!   datagram (now, local, from) ──▶ Gatekeeper::handle ──▶ Vec<Transmit> (local, to, octets)
//!   clock reaches poll_timeout() ──▶ Gatekeeper::handle_timeout ──▶ Vec<Transmit>
//!   admin (in/out of service, cap) ──▶ Gatekeeper::set_in_service / set_cap
//!   loads changed, [rebalance] on  ──▶ a check armed in poll_timeout ──▶ one move a check
//!   admin queries                  ──▶ Gatekeeper::snapshot
//! ```
//!
//! Time is a parameter and randomness is a seeded generator, so the same inputs always give
//! the same outputs: a pcap replays identically, and a TTL of hours passes in a test in
//! microseconds. The tokio server in [`crate::server`] only moves datagrams.
//!
//! What it keeps: per C-LAN loads ([`load`]), registrations ([`registry`]) and when they
//! expire (a heap of their deadlines, apart from the other timers), GCF reservations
//! (one per RAS source, at most `[limits] max_reservations`), the retransmission cache
//! ([`retransmit`]), gatekeeper-sent URQs waiting for their UCF, TTS phones waiting for a
//! socket, outbound trunk calls in progress ([`crate::calls`]), the per-source rate limit
//! ([`rate_limit`]) and, with `[rebalance]`, when to look for a crowded C-LAN next and which
//! phones were moved lately ([`rebalance`]). The rules themselves are the pure functions of [`policy`].
//!
//! Bad input (docs/rules.md §12) stops in [`Gatekeeper::handle`]: a source over its rate is
//! dropped unread, an oversized or undecodable datagram is counted by what was wrong with it
//! ([`stats::BadDatagram`]) and dropped or answered with XRS, and every reply to a source
//! without a registration passes the reflection bound of `[limits] reflection_ratio`.

mod access;
pub mod agls;
mod arena;
mod calls_view;
mod connections;
mod discovery;
mod endpoint_addresses;
pub mod events;
mod expiries;
pub mod load;
mod passwords;
pub mod policy;
pub mod rate_limit;
pub mod rebalance;
mod registration;
pub mod registry;
pub mod relay;
mod reload;
mod reservations;
pub mod retransmit;
mod routed;
pub mod signalling;
mod snapshot;
pub mod state;
pub mod stats;
pub mod topology;
pub mod warnings;

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::calls::{Calls, TrunkMembers};
use crate::config::{Clan, Config, Family, RegionId};
use crate::ras::reply::{self, AlternateGatekeeper, GatekeeperId};
use crate::ras::{self, Discovery, FullRegistration, KeepAlive, MessageKind, RasMessage, Request};
use agls::Agls;
use arena::Arena;
use events::{Ending, EndpointKey, Event, EventQueue};
use expiries::Expiries;
use load::{ClanLoad, Loads};
use rate_limit::RateLimit;
use rebalance::Rebalancer;
use registry::Registry;
use relay::Relay;
use reservations::Reservations;
use retransmit::RetransmitCache;
use signalling::Signalling;
use stats::BadDatagram;
use topology::{ClanIdx, Topology};

pub use calls_view::{CallEntry, CallView, LegView, RoutedCallView, TrunkNodeView, TrunkView};
pub use rebalance::{RebalanceMove, RebalanceView};
pub use relay::{CallEnd, CallState, CallStats};
pub use reload::Reloaded;
pub use signalling::{Closing, Command, ConnectionId, Refusal, SocketState, SocketStats};
pub use snapshot::{ClanView, Placement, RegionView, RegistrationView, Snapshot};
pub use stats::Stats;

/// The multicast group of gatekeeper discovery (H.225.0 §7.2.1).
pub const MULTICAST_GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 1, 41);

/// The multicast discovery port.
pub const MULTICAST_PORT: u16 = 1718;

/// How often a gatekeeper-sent URQ is sent again while no UCF comes (H.225.0 RAS timer).
pub const URQ_RETRY: Duration = Duration::from_secs(3);

/// How many times a gatekeeper-sent URQ is sent in all.
pub const URQ_ATTEMPTS: u32 = 3;

/// How often TTS phones without a socket are tried again.
pub const TTS_RETRY: Duration = Duration::from_secs(1);

/// The longest datagram read as RAS; longer ones are counted ([`BadDatagram::Oversized`])
/// and dropped unread. Real RAS messages fit an Ethernet frame; the largest a gatekeeper
/// sends, an RCF with a 128-entry AGL, is about 4 KB.
pub const MAX_DATAGRAM: usize = 8192;

/// The AGL entries of C-LANs `agl` (priority their place in the list).
fn agl_entries(
    clans: &[Clan],
    gatekeeper_id: &GatekeeperId,
    agl: &[ClanIdx],
    family: Family,
) -> Vec<AlternateGatekeeper> {
    agl.iter()
        .enumerate()
        .map(|(priority, &idx)| AlternateGatekeeper {
            // The address of the phone's family (docs/rules.md §17): its AGL holds C-LANs
            // that have one.
            ras_address: clans[idx].ras_address(family).unwrap_or(clans[idx].address),
            gatekeeper_id: Some(gatekeeper_id.clone()),
            priority: priority.min(127) as u8,
        })
        .collect()
}

/// A request as [`Gatekeeper::respond`] takes it: the few fields of a GRQ, keep-alive or
/// full RRQ that [`ras::read_request`] read without building them, or a decoded message.
#[derive(Clone, Copy)]
enum Incoming<'a> {
    Grq(&'a Discovery<'a>),
    KeepAlive(&'a KeepAlive<'a>),
    FullRegistration(&'a FullRegistration<'a>),
    Message(&'a RasMessage),
}

/// A reply on its way out: a message for the codec, or the octets a hand-written encoder
/// ([`ras::hot_reply`]) already wrote into the arena.
enum Reply {
    /// (Boxed: a `RasMessage` is some 2 KB.)
    Message(Box<RasMessage>),
    Octets(MessageKind, Bytes),
    /// A message holding an H.235.1 token, sealed with this key once encoded
    /// ([`passwords`]).
    Sealed(Box<RasMessage>, [u8; 20]),
}

impl From<RasMessage> for Reply {
    fn from(message: RasMessage) -> Reply {
        Reply::Message(Box::new(message))
    }
}

/// One datagram to send.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The local address (discovery or a C-LAN) to send it from.
    pub local: SocketAddr,
    /// Where to.
    pub to: SocketAddr,
    /// The encoded RAS message.
    pub payload: Bytes,
}

/// Why the gatekeeper cannot start with a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// The gatekeeper identifier cannot go on the wire.
    #[error("gatekeeper.gatekeeper_id: {0}")]
    GatekeeperId(ras::AliasError),
}

/// A C-LAN that admin operations name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no C-LAN is named {0:?}")]
pub struct UnknownClan(pub String);

/// How much state the core holds (for `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Registered endpoints.
    pub registrations: usize,
    /// GCF reservations not yet used.
    pub reservations: usize,
    /// TTS phones registered without a socket.
    pub tts_pending: usize,
    /// Gatekeeper-sent URQs waiting for their UCF.
    pub pending_urqs: usize,
    /// Deadlines held.
    pub timers: usize,
    /// Replies held for retransmissions.
    pub cached_replies: usize,
    /// Sources the rate limit keeps track of.
    pub rate_limit_sources: usize,
    /// Sources the rate limit forgot to make room for new ones (a counter).
    pub rate_limit_sources_forgotten: u64,
    /// Replies dropped from the retransmission cache before their time to make room (a
    /// counter).
    pub cached_replies_evicted: u64,
    /// Events dropped because they were not drained in time.
    pub events_dropped: u64,
}

/// An endpoint that admin operations name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no endpoint is registered as {0:?}")]
pub struct UnknownEndpoint(pub String);

/// A reservation: a GCF named this C-LAN to this RAS source.
#[derive(Debug, Clone, Copy)]
struct Reservation {
    clan: ClanIdx,
    expires: Instant,
    /// When its GRQ arrived (for the registration latency).
    made: Instant,
}

/// A gatekeeper-sent URQ waiting for its UCF.
#[derive(Debug, Clone)]
struct PendingUrq {
    transmit: Transmit,
    attempts: u32,
    next: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Urq(SocketAddr, u16),
}

/// The gatekeeper: all its state, driven by [`handle`](Gatekeeper::handle) and
/// [`handle_timeout`](Gatekeeper::handle_timeout).
pub struct Gatekeeper {
    config: Config,
    /// Each C-LAN's name (as `config.clans`), shared by the events that carry it.
    clan_labels: Vec<Arc<str>>,
    /// The configuration as it was given (before admin changes), for a reload to tell what
    /// the file changed.
    loaded: Config,
    gatekeeper_id: GatekeeperId,
    topology: Topology,
    loads: Loads,
    registry: Registry,
    /// The AGLs the registrations hold, one copy each, apart for each address family (an
    /// AGL's entries name the C-LANs' addresses of its phone's family).
    agls: [Agls; 2],
    reservations: Reservations,
    retransmits: RetransmitCache,
    rate_limit: RateLimit,
    pending_urqs: HashMap<(SocketAddr, u16), PendingUrq>,
    /// Gatekeeper-sent IRQs waiting for their IRR: per registration, the last one's
    /// `requestSeqNum` and when it was sent.
    pending_irqs: HashMap<u64, (u16, Instant)>,
    /// Drills of the admin port, per RAS source: the next answer to a request of this kind
    /// is withheld ([`Gatekeeper::withhold`]).
    withheld: HashMap<SocketAddr, MessageKind>,
    /// … and the next full RRQ is refused with an RRJ naming this C-LAN as the alternate
    /// ([`Gatekeeper::refer_to_alternate`]).
    alternates: HashMap<SocketAddr, ClanIdx>,
    tts_pending: BTreeSet<u64>,
    tts_retry_at: Option<Instant>,
    /// The deadlines of reservations and pending URQs, exactly one each: moving a deadline
    /// replaces its entry, so the set never outgrows the state it times.
    timers: BTreeSet<(Instant, Timer)>,
    /// When registrations expire (a registration's deadline is its `expires`; this finds
    /// the soonest).
    expiries: Expiries,
    next_seq: u16,
    rng: ChaCha8Rng,
    /// Outbound trunk calls in progress (docs/rules.md §10), with their own generator.
    calls: Calls,
    /// H.323 gateways registered by RRQ as trunk members, and the calls routed to them.
    trunk_members: TrunkMembers,
    /// Where replies' octets are kept (sent, and held for retransmissions).
    arena: Arena,
    /// The buffer replies are encoded into before they are copied to the arena.
    scratch: Vec<u8>,
    stats: Stats,
    events: EventQueue,
    /// Passwords of aliases and the newest token time stamps accepted.
    passwords: passwords::Passwords,
    /// The wall clock: this instant is this long after the UNIX epoch.
    wall: (Instant, Duration),
    /// Socket mode's connections, establishments and counters (inert in count mode).
    signalling: Signalling,
    /// Routed calls and the connections they need (inert unless `call_signalling =
    /// "routed"`).
    relay: Relay,
    /// `[rebalance]`: when the next check is due and who is held off (inert when off).
    rebalance: Rebalancer,
}

impl Gatekeeper {
    /// A gatekeeper with every C-LAN empty. The AGL offsets are seeded by `config`'s seed
    /// (0 when it has none: the server fills in a random one).
    pub fn new(config: Config) -> Result<Gatekeeper, StartError> {
        let gatekeeper_id = GatekeeperId::new(&config.gatekeeper.gatekeeper_id)
            .map_err(StartError::GatekeeperId)?;
        let topology = Topology::new(&config);
        let mut loads = Loads::new(config.clans.iter().map(|clan| ClanLoad {
            sockets: 0,
            reserved: 0,
            cap: clan.max_sockets,
            in_service: clan.in_service,
            region: clan.region,
            priority: clan.priority,
            families: Family::ALL.map(|family| clan.serves(family)),
        }));
        loads.set_warnings(config.clans.iter().map(|clan| clan.warn_sockets));
        let rng = ChaCha8Rng::seed_from_u64(config.gatekeeper.seed.unwrap_or(0));
        let calls = Calls::new(&config, config.gatekeeper.seed.unwrap_or(0));
        let passwords = passwords::Passwords::new(&config);
        let wall = (
            Instant::now(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default(),
        );
        let retransmits = RetransmitCache::new(config.limits.max_cached_replies);
        let rate_limit = RateLimit::new(&config.limits);
        let signalling = Signalling::new(&config.clans);
        let relay = Relay::new(config.clans.len());
        let rebalance = Rebalancer::new(config.rebalance);
        let clan_labels = config
            .clans
            .iter()
            .map(|clan| Arc::from(&*clan.name))
            .collect();
        Ok(Gatekeeper {
            clan_labels,
            loaded: config.clone(),
            config,
            gatekeeper_id,
            topology,
            loads,
            registry: Registry::default(),
            agls: Default::default(),
            reservations: Reservations::default(),
            retransmits,
            rate_limit,
            pending_urqs: HashMap::new(),
            pending_irqs: HashMap::new(),
            withheld: HashMap::new(),
            alternates: HashMap::new(),
            tts_pending: BTreeSet::new(),
            tts_retry_at: None,
            timers: BTreeSet::new(),
            expiries: Expiries::default(),
            next_seq: 0,
            rng,
            calls,
            trunk_members: TrunkMembers::default(),
            arena: Arena::default(),
            scratch: Vec::with_capacity(512),
            stats: Stats::default(),
            events: EventQueue::default(),
            passwords,
            wall,
            signalling,
            relay,
            rebalance,
        })
    }

    /// The configuration it runs on.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Counters of messages, rejects and failures.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Whether anybody watches the events (the server: whether an `/api/events` client is
    /// connected). While nobody does, none are built or kept; by default they are.
    pub fn set_events_watched(&mut self, watched: bool) {
        self.events.set_watched(watched);
    }

    /// Takes the events since the last call, oldest first.
    pub fn drain_events(&mut self) -> Vec<Event> {
        self.report_warnings();
        self.events.drain().collect()
    }

    /// Turns the `warn_sockets` crossings since the last call into a log line and an event
    /// each (the log line even while no one watches events).
    fn report_warnings(&mut self) {
        for crossing in self.loads.warnings_mut().take_crossings() {
            let clan = self.config.clans[crossing.clan].name.clone();
            let (load, warn_sockets) = (crossing.load, crossing.warn_sockets);
            if crossing.raised {
                tracing::warn!(
                    %clan, load, warn_sockets,
                    "C-LAN {clan}: {load} sockets, at its warn_sockets ({warn_sockets})"
                );
            } else {
                tracing::info!(
                    %clan, load, warn_sockets,
                    "C-LAN {clan}: {load} sockets, back below its warn_sockets ({warn_sockets}); \
                     warning cleared"
                );
            }
            self.events.push(Event::ClanWarning {
                clan,
                warning: crossing.raised,
                load,
                warn_sockets,
            });
        }
    }

    /// Events dropped because they were not drained in time.
    pub fn events_dropped(&self) -> u64 {
        self.events.dropped
    }

    /// Counts a reject and tells the watchers.
    fn note_reject(&mut self, message: &'static str, reason: &'static str) {
        self.stats.reject(message, reason);
        self.events.push(Event::Rejected { message, reason });
    }

    fn clan_name(&self, idx: ClanIdx) -> String {
        self.config.clans[idx].name.clone()
    }

    /// A C-LAN's name, shared: what the registration events carry, copied without
    /// allocating.
    fn clan_label(&self, idx: ClanIdx) -> Arc<str> {
        self.clan_labels[idx].clone()
    }

    /// A C-LAN's RAS address for a phone of `family` (docs/rules.md §17). The rules offer a
    /// phone only C-LANs with an address of its family; its primary address otherwise.
    fn ras_address(&self, idx: ClanIdx, family: Family) -> SocketAddr {
        let clan = &self.config.clans[idx];
        clan.ras_address(family).unwrap_or(clan.address)
    }

    /// A C-LAN's call signalling address for a phone of `family`, likewise.
    fn signal_address_for(&self, idx: ClanIdx, family: Family) -> SocketAddr {
        let clan = &self.config.clans[idx];
        clan.signal_address_of(family)
            .unwrap_or_else(|| clan.signal_address())
    }

    /// Every local address a socket must be bound to: discovery first, then each C-LAN's.
    pub fn local_addresses(&self) -> Vec<SocketAddr> {
        let mut addresses = vec![self.config.gatekeeper.discovery];
        addresses.extend(self.config.gatekeeper.discovery6);
        addresses.extend(self.config.clans.iter().flat_map(Clan::ras_addresses));
        addresses
    }

    /// Handles one received datagram; returns what to send.
    ///
    /// `local` is the address it arrived at (discovery, a C-LAN, or the multicast group),
    /// `from` its source. A source over its rate (`[limits] rate_per_source`) is dropped
    /// unread. A datagram that does not decode is counted by what was wrong with it and
    /// answered with XRS when its sequence number can be read; it never changes state.
    pub fn handle(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Vec<Transmit> {
        let mut out = Vec::new();
        self.handle_into(now, local, from, datagram, &mut out);
        out
    }

    /// [`handle`](Gatekeeper::handle), adding the datagrams to send to `out`: the server
    /// answers a batch of requests into one vector, kept from batch to batch, rather than
    /// allocating one a request.
    pub fn handle_into(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
        datagram: &[u8],
        out: &mut Vec<Transmit>,
    ) {
        if !self.rate_limit.admit(now, from.ip()) {
            self.stats.rate_limited += 1;
            return;
        }
        if datagram.len() > MAX_DATAGRAM {
            out.extend(self.malformed(local, from, datagram, BadDatagram::Oversized));
            return;
        }
        // Fast path: a retransmission is answered from the cache without decoding it, so a
        // storm of retransmissions costs a hash and a lookup each.
        let mut checked = None;
        if let (Some(kind), Some(seq)) = (
            ras::peek_kind(datagram),
            ras::peek_request_seq_num(datagram),
        ) {
            if kind.is_request() {
                let fingerprint = retransmit::fingerprint(datagram);
                let key = (local, from, seq);
                if let Some(replies) = self.cached(now, key, fingerprint, datagram.len()) {
                    self.stats.received[kind as usize] += 1;
                    out.extend(replies);
                    return;
                }
                checked = Some(fingerprint);
            }
        }
        let mut slot = None;
        let request = match ras::read_request(datagram, &mut slot) {
            Ok(request) => request,
            Err(error) => {
                tracing::debug!(peer = %from, %error, "undecodable datagram");
                out.extend(self.malformed(local, from, datagram, BadDatagram::of(&error)));
                return;
            }
        };
        let incoming = match &request {
            Request::Grq(discovery) => Incoming::Grq(discovery),
            Request::KeepAlive(keep_alive) => Incoming::KeepAlive(keep_alive),
            Request::FullRegistration(rrq) => Incoming::FullRegistration(rrq),
            Request::Message(message) => Incoming::Message(message),
        };
        let before = out.len();
        self.respond(now, (local, from), (incoming, datagram), checked, out);
        if !self.withheld.is_empty() {
            self.withhold_answer(from, datagram, out, before);
        }
        self.notice_loads(now);
    }

    /// A drill's withheld answer: when the next answer to `from`'s request of the kind
    /// withheld has just been written (from `out[before..]`), it is not sent. It is in the
    /// retransmission cache all the same, so the same request sent again (its
    /// `requestSeqNum` and octets) gets it.
    fn withhold_answer(
        &mut self,
        from: SocketAddr,
        datagram: &[u8],
        out: &mut Vec<Transmit>,
        before: usize,
    ) {
        let asked = ras::peek_kind(datagram);
        if asked.is_none() || self.withheld.get(&from).copied() != asked {
            return;
        }
        self.withheld.remove(&from);
        let written: Vec<Transmit> = out.drain(before..).collect();
        let (kept, held): (Vec<_>, Vec<_>) = written.into_iter().partition(|t| t.to != from);
        out.extend(kept);
        if !held.is_empty() {
            tracing::info!(peer = %from, request = ?asked, "answer withheld (drill)");
        }
    }

    /// Asks the processor to fetch the memory [`handle`](Gatekeeper::handle) reads first for
    /// `datagram` (its line of the retransmission cache's index, a cache miss otherwise):
    /// the server calls this for a whole batch before answering it, so the batch waits for
    /// memory once rather than once a request. Changes nothing.
    pub fn prefetch(&self, local: SocketAddr, from: SocketAddr, datagram: &[u8]) {
        if let Some(seq) = ras::peek_request_seq_num(datagram) {
            self.retransmits.prefetch((local, from, seq));
        }
    }

    /// A datagram that is no RAS message: counted by kind, answered with XRS when its
    /// sequence number can be read (an oversized one is not read at all).
    fn malformed(
        &mut self,
        local: SocketAddr,
        from: SocketAddr,
        datagram: &[u8],
        kind: BadDatagram,
    ) -> Vec<Transmit> {
        let seq = match kind {
            BadDatagram::Oversized => None,
            _ => ras::peek_request_seq_num(datagram),
        };
        let xrs = seq.and_then(|seq| {
            let xrs = reply::unknown_message_response(seq, datagram);
            self.reply(self.reply_from(local), from, datagram.len(), xrs.into())
        });
        self.stats.count_malformed(kind, xrs.is_some());
        xrs.into_iter().collect()
    }

    /// Handles one decoded message; `datagram` is its encoding (for the retransmission cache
    /// and XRS).
    pub fn handle_message(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
        message: &RasMessage,
        datagram: &[u8],
    ) -> Vec<Transmit> {
        let mut out = Vec::new();
        let incoming = Incoming::Message(message);
        self.respond(now, (local, from), (incoming, datagram), None, &mut out);
        self.notice_loads(now);
        out
    }

    /// The address replies leave from: the discovery socket for multicast requests.
    fn reply_from(&self, local: SocketAddr) -> SocketAddr {
        if local.ip().is_multicast() {
            self.config.gatekeeper.discovery
        } else {
            local
        }
    }

    /// The cached replies to an identical earlier request (of `request_len` octets), counted
    /// as sent again. A reply cached while its source was registered is held back when the
    /// source no longer is and the reply is over the reflection bound (a C-LAN fault
    /// unregistered it, and its RCF with the AGL would otherwise go to whoever sends the old
    /// RRQ again from its address).
    fn cached(
        &mut self,
        now: Instant,
        key: (SocketAddr, SocketAddr, u16),
        fingerprint: u64,
        request_len: usize,
    ) -> Option<Vec<Transmit>> {
        self.retransmits.expire(now);
        let mut replies = self.retransmits.lookup(key, fingerprint)?;
        let before = replies.len();
        replies.retain(|reply| self.within_reflection_bound(key.1, request_len, &reply.payload));
        self.stats.reflection_dropped += (before - replies.len()) as u64;
        Some(self.answer_again(replies))
    }

    /// The reflection bound (`[limits] reflection_ratio`): a reply to a source with no
    /// registration is at most that many times its request. Every reply is checked here,
    /// the new ones in [`reply`](Gatekeeper::reply) and the cached ones in `cached`.
    fn within_reflection_bound(&self, to: SocketAddr, request_len: usize, reply: &[u8]) -> bool {
        reply.len() <= request_len.saturating_mul(self.config.limits.reflection_ratio)
            || self.registry.by_source(to).is_some()
    }

    /// Answers a decoded message, adding the reply to `out`. `checked` is the fingerprint of
    /// a request whose cache lookup [`handle`](Gatekeeper::handle) already made (and
    /// missed).
    fn respond(
        &mut self,
        now: Instant,
        (local, from): (SocketAddr, SocketAddr),
        (incoming, datagram): (Incoming<'_>, &[u8]),
        checked: Option<u64>,
        out: &mut Vec<Transmit>,
    ) {
        let (kind, seq) = match incoming {
            Incoming::Grq(discovery) => (MessageKind::Grq, discovery.seq),
            Incoming::KeepAlive(keep_alive) => (MessageKind::Rrq, keep_alive.seq),
            Incoming::FullRegistration(rrq) => (MessageKind::Rrq, rrq.seq),
            Incoming::Message(message) => (ras::kind(message), ras::request_seq_num(message)),
        };
        let span = tracing::debug_span!("ras", peer = %from, kind = kind.short_name(), seq);
        let _entered = span.enter();
        self.stats.received[kind as usize] += 1;
        if !kind.is_request() {
            self.handle_response(from, kind, seq);
            return;
        }
        let fingerprint = match checked {
            Some(fingerprint) => fingerprint,
            None => {
                let fingerprint = retransmit::fingerprint(datagram);
                let key = (local, from, seq);
                if let Some(replies) = self.cached(now, key, fingerprint, datagram.len()) {
                    out.extend(replies);
                    return;
                }
                fingerprint
            }
        };
        let reply = match self.prove(now, from, incoming, datagram) {
            Err(denied) => denied,
            Ok(proof) => {
                let reply = match incoming {
                    Incoming::Grq(discovery) => {
                        self.gatekeeper_request(now, local, from, discovery)
                    }
                    Incoming::KeepAlive(keep_alive) => Some(self.keep_alive(
                        now,
                        from,
                        keep_alive.seq,
                        registry::key_of_octets(keep_alive.endpoint_id),
                        keep_alive.time_to_live,
                    )),
                    Incoming::FullRegistration(rrq) => {
                        Some(self.full_registration(now, local, from, rrq))
                    }
                    Incoming::Message(message) => self.request(now, local, from, message, datagram),
                };
                reply.map(|reply| self.secured(now, reply, proof))
            }
        };
        let Some(reply) = reply else {
            return;
        };
        let reply_from = self.reply_from(local);
        let transmit = self.reply(reply_from, from, datagram.len(), reply);
        self.retransmits
            .store(now, (local, from, seq), fingerprint, transmit.as_ref());
        out.extend(transmit);
    }

    /// The reply to a decoded request message.
    fn request(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
        message: &RasMessage,
        datagram: &[u8],
    ) -> Option<Reply> {
        let seq = ras::request_seq_num(message);
        match message {
            RasMessage::gatekeeperRequest(grq) => self
                .gatekeeper_request(now, local, from, &Discovery::from(grq))
                .map(|reply| self.with_selection(grq, reply)),
            RasMessage::registrationRequest(rrq) => {
                self.registration_request(now, local, from, rrq)
            }
            RasMessage::unregistrationRequest(urq) => {
                self.unregistration_request(now, from, urq).map(Reply::from)
            }
            RasMessage::admissionRequest(arq) => {
                self.admission_request(now, from, arq).map(Reply::from)
            }
            RasMessage::disengageRequest(drq) => {
                // A call that ends may let rebalancing move its phone.
                self.wake_rebalance(now);
                self.disengage_request(now, from, drq).map(Reply::from)
            }
            RasMessage::bandwidthRequest(brq) => self.bandwidth_request(from, brq).map(Reply::from),
            RasMessage::infoRequestResponse(irr) => {
                self.info_request_response(now, from, irr).map(Reply::from)
            }
            _ => Some(reply::unknown_message_response(seq, datagram).into()),
        }
    }

    /// The cached replies to a retransmitted request, counted as sent again.
    fn answer_again(&mut self, replies: Vec<Transmit>) -> Vec<Transmit> {
        self.stats.retransmissions += 1;
        tracing::debug!("retransmission: the same reply again");
        for reply in &replies {
            if let Some(kind) = ras::peek_kind(&reply.payload) {
                self.stats.sent[kind as usize] += 1;
            }
        }
        replies
    }

    fn handle_response(&mut self, from: SocketAddr, kind: MessageKind, seq: u16) {
        if !matches!(kind, MessageKind::Ucf | MessageKind::Urj) {
            return;
        }
        if let Some(pending) = self.pending_urqs.remove(&(from, seq)) {
            self.disarm(pending.next, Timer::Urq(from, seq));
            tracing::debug!("URQ answered");
        }
    }

    /// Encodes a message and counts it as sent.
    fn send(
        &mut self,
        local: SocketAddr,
        to: SocketAddr,
        message: &RasMessage,
    ) -> Option<Transmit> {
        let transmit = self.encode(local, to, message, None)?;
        self.stats.sent[ras::kind(message) as usize] += 1;
        Some(transmit)
    }

    /// Encodes a message, sealing its H.235.1 token with `seal` when given (an encoding
    /// failure is counted: a bug if it ever happens).
    fn encode(
        &mut self,
        local: SocketAddr,
        to: SocketAddr,
        message: &RasMessage,
        seal: Option<&[u8; 20]>,
    ) -> Option<Transmit> {
        let encoded = ras::encode_into(message, &mut self.scratch);
        if let (Ok(()), Some(key)) = (&encoded, seal) {
            if !ras::h235_1::seal(&mut self.scratch, key) {
                self.stats.encode_failures += 1;
                tracing::error!("a reply to seal has no H.235.1 token");
                return None;
            }
        }
        match encoded {
            Ok(()) => Some(Transmit {
                local,
                to,
                payload: self.arena.copy(&self.scratch),
            }),
            Err(error) => {
                self.stats.encode_failures += 1;
                tracing::error!(%error, "cannot encode a reply");
                None
            }
        }
    }

    /// Encodes the reply to a request of `request_len` octets and counts it as sent, within
    /// the reflection bound: to a source with no registration, a reply longer than
    /// `[limits] reflection_ratio` times its request is shortened ([`ras::shorten`]: no
    /// alternate gatekeepers, no echo), and not sent at all when still too long. Every new
    /// reply passes here (and every cached one the same bound in `cached`), so a forged
    /// source address can never be sent more than that multiple of what the forger sent.
    fn reply(
        &mut self,
        local: SocketAddr,
        to: SocketAddr,
        request_len: usize,
        reply: Reply,
    ) -> Option<Transmit> {
        let mut seal = None;
        let mut message = match reply {
            Reply::Octets(kind, payload)
                if self.within_reflection_bound(to, request_len, &payload) =>
            {
                self.stats.sent[kind as usize] += 1;
                return Some(Transmit { local, to, payload });
            }
            // Too long for an unregistered source: read back, to be shortened as any reply.
            Reply::Octets(_, payload) => match ras::decode(&payload) {
                Ok(message) => message,
                Err(error) => {
                    self.stats.encode_failures += 1;
                    tracing::error!(%error, "a hand-written reply does not decode");
                    return None;
                }
            },
            Reply::Message(message) => *message,
            Reply::Sealed(message, key) => {
                seal = Some(key);
                *message
            }
        };
        let mut transmit = self.encode(local, to, &message, seal.as_ref())?;
        if !self.within_reflection_bound(to, request_len, &transmit.payload) {
            if ras::shorten(&mut message) {
                transmit = self.encode(local, to, &message, seal.as_ref())?;
            }
            if !self.within_reflection_bound(to, request_len, &transmit.payload) {
                self.stats.reflection_dropped += 1;
                tracing::debug!(
                    len = transmit.payload.len(),
                    request_len,
                    "reply to an unregistered source too long: not sent"
                );
                return None;
            }
            self.stats.reflection_shortened += 1;
        }
        self.stats.sent[ras::kind(&message) as usize] += 1;
        Some(transmit)
    }

    /// A phone's home region: the network map, else the region of the C-LAN it sent to,
    /// else `default_region`.
    fn home_region(&self, local: SocketAddr, ip: IpAddr) -> RegionId {
        self.config
            .mapped_region(ip)
            .unwrap_or_else(|| match self.topology.clan_at.get(&local) {
                Some(&clan) => self.topology.clan_region[clan],
                None => self.config.gatekeeper.default_region,
            })
    }

    /// The AGL entries of a list of C-LANs, priorities 0, 1, 2, ….
    fn agl_entries(&self, agl: &[ClanIdx], family: Family) -> Vec<AlternateGatekeeper> {
        agl_entries(&self.config.clans, &self.gatekeeper_id, agl, family)
    }

    /// A GCF naming `ras_address`, written by the hand-written encoder (the generated codec
    /// when that cannot). To an Avaya endpoint, without `gatekeeperIdentifier`: some crash
    /// on it (docs/rules.md §14).
    fn gatekeeper_confirm(&mut self, seq: u16, ras_address: SocketAddr, avaya: bool) -> Reply {
        if avaya {
            let mut gcf = reply::gatekeeper_confirm(seq, &self.gatekeeper_id, ras_address);
            ras::avaya::leave_out_gatekeeper_id(&mut gcf);
            return gcf.into();
        }
        let octets = self.gatekeeper_id.octets();
        match ras::hot_reply::gatekeeper_confirm(&mut self.scratch, seq, octets, ras_address) {
            Some(()) => Reply::Octets(MessageKind::Gcf, self.arena.copy(&self.scratch)),
            None => reply::gatekeeper_confirm(seq, &self.gatekeeper_id, ras_address).into(),
        }
    }

    fn next_seq(&mut self) -> u16 {
        self.next_seq = self.next_seq.wrapping_add(1).max(1);
        self.next_seq
    }

    fn arm(&mut self, at: Instant, timer: Timer) {
        self.timers.insert((at, timer));
    }

    fn disarm(&mut self, at: Instant, timer: Timer) {
        self.timers.remove(&(at, timer));
    }

    /// Notes a registration's new `expires` (already stored in the registry).
    ///
    /// The soonest entry was live when last settled, and only `key`'s registration has
    /// changed since (every other change of a registration's deadline or existence is
    /// followed by a settle): an entry of another key on top is still live, and settling
    /// again would only look it up in the registry (a cache miss a keep-alive, a twentieth
    /// of its work in a plan of 40,000 phones).
    fn arm_expiry(&mut self, at: Instant, key: u64) {
        let top_is_another = self.expiries.first_key().is_some_and(|top| top != key);
        self.expiries.push(at, key);
        if self.expiries.wants_rebuild(self.registry.len()) {
            let deadlines = self
                .registry
                .iter_any_order()
                .map(|(key, r)| (r.expires, key));
            self.expiries.rebuild(deadlines);
        }
        if top_is_another {
            debug_assert!(self.expiries_top_is_live(), "a stale deadline on top");
        } else {
            self.settle_expiries();
        }
    }

    /// Is the soonest registration deadline held a registration's own (or none held)?
    fn expiries_top_is_live(&self) -> bool {
        self.expiries
            .first()
            .is_none_or(|(at, key)| self.registry.get(key).is_some_and(|r| r.expires == at))
    }

    /// Drops the expiries no registration holds any more from the top, so that the next one
    /// is real.
    fn settle_expiries(&mut self) {
        let registry = &self.registry;
        self.expiries
            .settle(|at, key| registry.get(key).is_some_and(|r| r.expires == at));
    }

    /// Deadlines held: one per registration, reservation and unanswered URQ.
    fn deadlines(&self) -> usize {
        self.timers.len() + self.reservations.len() + self.registry.len()
    }

    /// How much state the core holds now.
    pub fn counts(&self) -> Counts {
        Counts {
            registrations: self.registry.len(),
            reservations: self.reservations.len(),
            tts_pending: self.tts_pending.len(),
            pending_urqs: self.pending_urqs.len(),
            timers: self.deadlines(),
            cached_replies: self.retransmits.len(),
            rate_limit_sources: self.rate_limit.sources(),
            rate_limit_sources_forgotten: self.rate_limit.forgotten,
            cached_replies_evicted: self.retransmits.evicted,
            events_dropped: self.events.dropped,
        }
    }

    /// Deadlines held (one per reservation, registration and unanswered URQ).
    pub fn timer_count(&self) -> usize {
        self.deadlines()
    }

    /// When [`handle_timeout`](Gatekeeper::handle_timeout) should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let timers = self.timers.first().map(|&(at, _)| at);
        [
            timers,
            self.reservations.next_expiry(),
            self.expiries.next(),
            self.retransmits.next_expiry(),
            self.tts_retry_at,
            self.signalling.next_timer(),
            self.relay_next_timer(),
            self.rebalance.due(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Expires what is due at `now`: reservations, registrations, cached replies; sends URQs
    /// again; tries TTS phones without a socket again; with `[rebalance]`, looks for a
    /// crowded C-LAN when a check is due (docs/rules.md §9.2).
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Transmit> {
        let mut out = Vec::new();
        self.retransmits.expire(now);
        // The chunks of the replies that expired go back to the system, but for a spare.
        self.arena.trim();
        // Reservations run out apart from the other timers (see `reservations`); nothing
        // below makes one.
        while let Some((_, reservation)) = self.reservations.pop_due(now) {
            self.loads.release(reservation.clan);
            self.stats.reservations_expired += 1;
        }
        loop {
            // The soonest due deadline of either kind; a registration's first when both fall
            // on one instant.
            let timer = self.timers.first().copied().filter(|&(at, _)| at <= now);
            if self
                .expiries
                .next()
                .is_some_and(|at| at <= now && timer.is_none_or(|(other, _)| at <= other))
            {
                if let Some((at, key)) = self.expiries.pop_due(now) {
                    if self.registry.get(key).is_some_and(|r| r.expires == at) {
                        tracing::debug!(endpoint = %registry::endpoint_id_text(key), "TTL expired");
                        self.unregister(now, key, Ending::Ttl);
                        self.stats.registrations_expired += 1;
                    }
                    self.settle_expiries();
                }
                continue;
            }
            let Some((at, timer)) = timer else {
                break;
            };
            self.timers.pop_first();
            match timer {
                Timer::Urq(to, seq) => {
                    if let Some(pending) = self.pending_urqs.get_mut(&(to, seq)) {
                        if pending.next == at {
                            if pending.attempts >= URQ_ATTEMPTS {
                                self.pending_urqs.remove(&(to, seq));
                            } else {
                                pending.attempts += 1;
                                pending.next = at + URQ_RETRY;
                                let transmit = pending.transmit.clone();
                                self.arm(at + URQ_RETRY, Timer::Urq(to, seq));
                                self.stats.sent[MessageKind::Urq as usize] += 1;
                                out.push(transmit);
                            }
                        }
                    }
                }
            }
        }
        if self.tts_retry_at.is_some_and(|at| at <= now) {
            self.tts_retry_at = None;
            self.place_pending_tts(now);
        }
        self.socket_timeouts(now);
        self.relay_timeouts(now);
        // Last, on the loads as the expiries above left them.
        self.notice_loads(now);
        out.extend(self.rebalance_due(now));
        self.notice_loads(now);
        out
    }

    /// Frees a registration's socket (in socket mode closing its connection) and forgets
    /// it.
    fn unregister(
        &mut self,
        now: Instant,
        key: u64,
        reason: Ending,
    ) -> Option<registry::Registration> {
        self.registry.get(key)?;
        // Its calls end first, so their Release Completes go out before its socket closes.
        let ending = match reason {
            Ending::ClanOutOfService => relay::CallEnd::ClanOutOfService,
            _ => relay::CallEnd::Unregistered,
        };
        self.end_calls_of(now, key, ending);
        let registration = self.registry.remove(key)?;
        self.settle_expiries();
        if let Some(clan) = registration.socket {
            self.loads.remove_socket(clan);
        }
        let closing = match reason {
            Ending::ClanOutOfService => Closing::ClanOutOfService,
            _ => Closing::Unregistered,
        };
        self.socket_ended(now, key, &registration, closing);
        self.registration_ended(key, registration.socket, reason);
        Some(registration)
    }

    /// What ends with registration `key` (socket on `socket`) besides its registry entry
    /// and its socket: its calls, a pending TTS placement, and the event.
    fn registration_ended(&mut self, key: u64, socket: Option<ClanIdx>, reason: Ending) {
        self.pending_irqs.remove(&key);
        self.calls.end_all_of(key);
        self.trunk_members.end_all_of(key);
        self.trunk_members.leave(key);
        self.tts_pending.remove(&key);
        if self.events.watched() {
            self.events.push(Event::Unregistered {
                endpoint_id: EndpointKey(key),
                reason,
                clan: socket.map(|clan| self.clan_label(clan)),
            });
        }
    }

    /// Drops the reservation of a RAS source, if any.
    fn release_reservation(&mut self, source: SocketAddr) -> Option<ClanIdx> {
        let reservation = self.reservations.remove(&source)?;
        self.loads.release(reservation.clan);
        Some(reservation.clan)
    }

    /// The C-LAN of a name.
    pub fn clan_by_name(&self, name: &str) -> Result<ClanIdx, UnknownClan> {
        self.config
            .clans
            .iter()
            .position(|clan| clan.name == name)
            .ok_or_else(|| UnknownClan(name.to_string()))
    }

    /// Takes a C-LAN out of service or back into service (docs/rules.md §9.1, §9.2). Out of
    /// service: its reservations are dropped and each phone with a socket on it is unregistered
    /// with a gatekeeper-sent URQ carrying its new AGL; its load drops to 0. Back in service:
    /// no phone is moved to it, unless `[rebalance]` is on (a check is armed).
    pub fn set_in_service(
        &mut self,
        now: Instant,
        clan: ClanIdx,
        in_service: bool,
    ) -> Vec<Transmit> {
        self.set_many_in_service(now, &[clan], in_service)
    }

    /// Takes several C-LANs out of service, or back, at one instant (a region's outage, a
    /// site's): every one is marked first, then each is drained as
    /// [`set_in_service`](Gatekeeper::set_in_service) drains one, so that the URQs carry AGLs
    /// without any of them.
    pub fn set_many_in_service(
        &mut self,
        now: Instant,
        clans: &[ClanIdx],
        in_service: bool,
    ) -> Vec<Transmit> {
        let changed: Vec<ClanIdx> = clans
            .iter()
            .copied()
            .filter(|&clan| self.loads.get(clan).in_service != in_service)
            .collect();
        for &clan in &changed {
            self.loads.set_in_service(clan, in_service);
            self.config.clans[clan].in_service = in_service;
            self.events.push(Event::ClanState {
                clan: self.clan_name(clan),
                in_service,
            });
            tracing::info!(clan = %self.config.clans[clan].name, in_service, "C-LAN state changed");
        }
        let mut out = Vec::new();
        if !in_service {
            for &clan in &changed {
                self.clan_calls_end(now, clan);
                out.extend(self.drain_clan(now, clan));
            }
        }
        self.notice_loads(now);
        out
    }

    /// Drops a C-LAN's reservations and unregisters each phone with a socket on it by a
    /// gatekeeper-sent URQ (`reregistrationRequired`) carrying its new AGL.
    fn drain_clan(&mut self, now: Instant, clan: ClanIdx) -> Vec<Transmit> {
        let reserved: Vec<SocketAddr> = self
            .reservations
            .iter()
            .filter(|(_, r)| r.clan == clan)
            .map(|(&source, _)| source)
            .collect();
        for source in reserved {
            self.release_reservation(source);
        }
        let mut out = Vec::new();
        let mut keys = self.registry.with_socket_on(clan);
        // Socket mode: phones registered there whose socket closed could never connect
        // there again; they re-register elsewhere too.
        keys.extend(self.without_place_at(clan));
        for key in keys {
            if let Some(registration) = self.unregister(now, key, Ending::ClanOutOfService) {
                let tiers = self.topology.tiers(registration.region).into_owned();
                let family = registration.family();
                let agl =
                    policy::build_agl(&tiers, &self.loads, &self.config.agl, family, &mut self.rng);
                let reason = reply::UrqReason::ReregistrationRequired;
                out.extend(self.send_urq(now, (key, &registration), reason, &agl));
            }
        }
        out
    }

    /// Sends a gatekeeper-sent URQ to an endpoint already removed, from the C-LAN it
    /// registered at, and keeps it for sending again until a UCF comes.
    fn send_urq(
        &mut self,
        now: Instant,
        removed: (u64, &registry::Registration),
        reason: reply::UrqReason,
        agl: &[ClanIdx],
    ) -> Option<Transmit> {
        let local = self.ras_address(removed.1.registered_via, removed.1.family());
        self.urq_from(now, local, removed, reason, agl, true)
    }

    /// A gatekeeper-sent URQ from `local` to an endpoint already removed (its key and what
    /// it held), carrying `agl`; with `retry` it is kept for sending again until a UCF comes.
    fn urq_from(
        &mut self,
        now: Instant,
        local: SocketAddr,
        (key, registration): (u64, &registry::Registration),
        reason: reply::UrqReason,
        agl: &[ClanIdx],
        retry: bool,
    ) -> Option<Transmit> {
        let entries = self.agl_entries(agl, registration.family());
        let seq = self.next_seq();
        let mut urq = reply::unregistration_request(&reply::Urq {
            request_seq_num: seq,
            call_signal_address: &registration.call_signal_address(),
            aliases: &registration.aliases.to_vec(),
            endpoint_id: Some(&registry::endpoint_id(key)),
            gatekeeper_id: Some(&self.gatekeeper_id),
            reason: Some(reason),
            agl: &entries,
        });
        if registration.avaya.is_some() {
            ras::avaya::leave_out_gatekeeper_id(&mut urq);
        }
        let transmit = self.send(local, registration.source, &urq)?;
        if retry {
            let next = now + URQ_RETRY;
            self.pending_urqs.insert(
                (registration.source, seq),
                PendingUrq {
                    transmit: transmit.clone(),
                    attempts: 1,
                    next,
                },
            );
            self.arm(next, Timer::Urq(registration.source, seq));
        }
        Some(transmit)
    }

    /// Unregisters an endpoint on an administrator's word: a gatekeeper-sent URQ
    /// (`maintenance`, no AGL) and its socket is freed.
    pub fn unregister_endpoint(
        &mut self,
        now: Instant,
        endpoint_id: &str,
    ) -> Result<Vec<Transmit>, UnknownEndpoint> {
        let key = registry::key_of(endpoint_id)
            .filter(|&key| self.registry.get(key).is_some())
            .ok_or_else(|| UnknownEndpoint(endpoint_id.to_string()))?;
        let registration = self
            .unregister(now, key, Ending::Admin)
            .ok_or_else(|| UnknownEndpoint(endpoint_id.to_string()))?;
        self.notice_loads(now);
        Ok(self
            .send_urq(
                now,
                (key, &registration),
                reply::UrqReason::Maintenance,
                &[],
            )
            .into_iter()
            .collect())
    }

    /// Asks a registered endpoint for its state: a gatekeeper-sent IRQ from the C-LAN it
    /// registered at, about all its calls. Its IRR, matched by `requestSeqNum`, is counted
    /// and raises an `info_response` event. The IRQ's `requestSeqNum`.
    pub fn request_info(
        &mut self,
        now: Instant,
        endpoint_id: &str,
    ) -> Result<(u16, Vec<Transmit>), UnknownEndpoint> {
        let unknown = || UnknownEndpoint(endpoint_id.to_string());
        let key = registry::key_of(endpoint_id).ok_or_else(unknown)?;
        let registration = self.registry.get(key).ok_or_else(unknown)?;
        let (to, family) = (registration.ras_address(), registration.family());
        let local = self.ras_address(registration.registered_via, family);
        let seq = self.next_seq();
        let irq = reply::info_request(seq, local);
        let transmit = self.send(local, to, &irq);
        self.pending_irqs.insert(key, (seq, now));
        Ok((seq, transmit.into_iter().collect()))
    }

    /// A drill: the answer to the endpoint's next request of kind `request` (`RRQ`, `GRQ`,
    /// `ARQ`, …) is not sent, though it is kept for the request's retransmission. Its RAS
    /// address.
    pub fn withhold(
        &mut self,
        endpoint_id: &str,
        request: MessageKind,
    ) -> Result<SocketAddr, UnknownEndpoint> {
        let key = registry::key_of(endpoint_id)
            .filter(|&key| self.registry.get(key).is_some())
            .ok_or_else(|| UnknownEndpoint(endpoint_id.to_string()))?;
        let source = self.registry.get(key).map(|r| r.source);
        let source = source.ok_or_else(|| UnknownEndpoint(endpoint_id.to_string()))?;
        self.withheld.insert(source, request);
        Ok(source)
    }

    /// A drill: the endpoint's next full RRQ, wherever it arrives, is refused with RRJ
    /// `resourceUnavailable` whose `altGKInfo` names one alternate — the first C-LAN of its
    /// AGL in service other than the one it registered at. The alternate's name; `None` when
    /// its AGL has no other.
    pub fn refer_to_alternate(
        &mut self,
        endpoint_id: &str,
    ) -> Result<Option<String>, UnknownEndpoint> {
        let registration = registry::key_of(endpoint_id)
            .and_then(|key| self.registry.get(key))
            .ok_or_else(|| UnknownEndpoint(endpoint_id.to_string()))?;
        let (source, via) = (registration.source, registration.registered_via);
        let alternate = registration
            .agl
            .iter()
            .copied()
            .find(|&clan| clan != via && self.loads.get(clan).in_service);
        let Some(clan) = alternate else {
            return Ok(None);
        };
        self.alternates.insert(source, clan);
        Ok(Some(self.clan_name(clan)))
    }

    /// A drill: the gatekeeper loses its state, as a gatekeeper whose process restarted
    /// with the configuration in force (C-LANs out of service stay out): registrations,
    /// reservations, calls and every pending retry are gone, and every connection is closed
    /// (the commands to close them are taken with [`take_commands`](Gatekeeper::take_commands)).
    /// Its next connection numbers follow the old ones, so that what the glue still reports
    /// of an old connection is not taken for a new one, and so do its `requestSeqNum`s; the
    /// wall clock and whether events are watched carry over. An endpoint's next keep-alive gets RRJ
    /// `fullRegistrationRequired` (docs/rules.md §5.7).
    pub fn restart(&mut self) -> Result<(), StartError> {
        let mut fresh = Gatekeeper::new(self.config.clone())?;
        let mut open: std::collections::BTreeSet<ConnectionId> =
            self.signalling.connections.keys().copied().collect();
        open.extend(self.signalling.abandoned.keys().copied());
        open.extend(self.relay.connections.keys().copied());
        fresh.signalling.continue_ids(&self.signalling);
        // Its requestSeqNums go on too: endpoints keep the answers they sent for a while
        // (H323Plus 30 s, keyed by the gatekeeper's address and the number), and a URQ that
        // reused a number just answered would get that answer again.
        fresh.next_seq = self.next_seq;
        fresh.wall = self.wall;
        fresh.set_events_watched(self.events.watched());
        fresh.signalling.commands.extend(
            open.into_iter()
                .map(|id| Command::Close { id, reset: true }),
        );
        tracing::info!("the gatekeeper lost its state (restart drill)");
        *self = fresh;
        Ok(())
    }

    /// Changes a C-LAN's cap. A cap below the load stops new work on it until the load falls;
    /// no phone is dropped. A higher cap may make room for rebalancing (checked at the latest
    /// instant the core was given).
    pub fn set_cap(&mut self, clan: ClanIdx, cap: u32) {
        self.loads.set_cap(clan, cap);
        self.notice_loads_untimed();
        self.config.clans[clan].max_sockets = cap.max(1);
        self.events.push(Event::ClanCap {
            clan: self.clan_name(clan),
            max_sockets: cap.max(1),
        });
    }
}
