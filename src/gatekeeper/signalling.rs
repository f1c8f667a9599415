//! Socket mode (`sockets = "tcp"`, docs/rules.md §8): the phones' real TCP signalling
//! connections, as the core sees them. No I/O here either: the glue reports what the OS did
//! — a connection accepted on a C-LAN's signalling address, a connect that completed or
//! failed, octets read, a close — and takes [`Command`]s back (open a connection from this
//! C-LAN to that phone, write this, close that).
//!
//! ```text
//!   accepted (C-LAN, from) ──▶ Gatekeeper::accept ──▶ Ok(id) keep it │ Err(Refusal) reset it
//!   connect done / failed  ──▶ Gatekeeper::connected / connect_failed
//!   octets read            ──▶ Gatekeeper::received (TPKT counted; a bad frame closes)
//!   closed by the phone    ──▶ Gatekeeper::closed
//!                              Gatekeeper::take_commands ──▶ Connect / Send / Close
//! ```
//!
//! **Places.** A C-LAN's load counts a *place* for every phone whose socket is there or on
//! its way there: in count mode that place is the socket; in socket mode it is held from
//! the RCF (non-TTS: on the C-LAN the RRQ came to; TTS: where docs/rules.md §7 puts it) and becomes
//! an
//! *established* socket when the connection is up and its establishment is over. So the
//! cap holds in both modes by the same counter, and `established` says how many real
//! sockets a C-LAN holds.
//!
//! **Establishments.** One lasts from the accepted (non-TTS) or initiated (TTS) connection
//! until it is up plus `setup_ms`. At most `max_setups_per_clan` run at once per C-LAN:
//! a non-TTS phone's connection beyond that is refused (reset) at once — Avaya's C-LAN
//! rejects the sixth request and the phone retries — and TTS set-ups beyond it wait in
//! order. When an establishment completes the socket is in service; a phone that asked for
//! the service frame in its RRQ ([`crate::ras::service_frame`]) is told so with an empty TPKT
//! frame, and nothing is written to any other phone but the Q.931 messages of its calls.
//!
//! **Attribution.** A connection accepted on a C-LAN is the socket of a registered non-TTS
//! phone whose RAS source has the connection's source IP and who registered at that C-LAN
//! and has no connection yet. When several phones share that IP (behind NAT), the one
//! registered first (its `endpointIdentifier` the lowest) takes it, phones holding a place
//! before phones that lost their socket. A connection nobody claims is refused at once, so
//! a stranger holds nothing: a source IP can hold at most as many connections as it has
//! registered phones.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::stats::LatencyHistogram;
use super::topology::ClanIdx;

/// The first wait before a TTS phone whose every candidate failed is tried again; it
/// doubles with each round, up to [`TTS_BACKOFF_MAX`].
pub const TTS_BACKOFF_FIRST: Duration = Duration::from_secs(1);

/// The longest wait between two rounds of a TTS phone's set-up.
pub const TTS_BACKOFF_MAX: Duration = Duration::from_secs(32);

/// A signalling connection, numbered by the core.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ConnectionId(pub u64);

impl std::fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What the core asks the glue to do with connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Open a TCP connection from `from` (a C-LAN's IP, any port) to `to` (a TTS phone's
    /// `callSignalAddress`); report [`connected`](super::Gatekeeper::connected) or
    /// [`connect_failed`](super::Gatekeeper::connect_failed).
    Connect {
        /// The connection's number.
        id: ConnectionId,
        /// The local IP.
        from: IpAddr,
        /// The phone's address.
        to: SocketAddr,
    },
    /// Write these octets on it.
    Send {
        /// Which connection.
        id: ConnectionId,
        /// What to write.
        payload: Bytes,
    },
    /// Close it (a connect in progress is given up). Nothing more is reported about it.
    Close {
        /// Which connection.
        id: ConnectionId,
        /// With RST (linger 0) rather than FIN.
        reset: bool,
    },
}

/// Why a connection is refused (closed at once), as counted in `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// No registered phone waiting for a socket there has its source IP.
    Stranger,
    /// Its phone lost its socket and the C-LAN has no room for it now (or is out of
    /// service).
    NoRoom,
    /// `max_setups_per_clan` establishments are in progress on that C-LAN.
    Busy,
    /// The process is out of file descriptors (the glue's refusal, counted here).
    Descriptors,
    /// The gatekeeper runs in count mode (nothing should be listening).
    CountMode,
}

impl Refusal {
    /// Every reason, in counter order.
    pub const ALL: [Refusal; 5] = [
        Refusal::Stranger,
        Refusal::NoRoom,
        Refusal::Busy,
        Refusal::Descriptors,
        Refusal::CountMode,
    ];

    /// The label `/metrics` shows.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::Stranger => "stranger",
            Refusal::NoRoom => "no_room",
            Refusal::Busy => "busy",
            Refusal::Descriptors => "descriptors",
            Refusal::CountMode => "count_mode",
        }
    }
}

/// Why a socket (or a set-up) ended, as counted in `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Closing {
    /// The phone closed it (FIN).
    Fin,
    /// The phone reset it (RST), or a read failed.
    Reset,
    /// TCP keep-alive probes went unanswered.
    KeepAlive,
    /// The phone sent something that is not TPKT, or a frame over the limit.
    Frame,
    /// Its registration ended (URQ, TTL, re-registration, admin, reload).
    Unregistered,
    /// Its C-LAN went out of service.
    ClanOutOfService,
    /// A TTS connect was refused or failed.
    ConnectFailed,
    /// A TTS connect did not complete within `setup_timeout_ms`.
    ConnectTimedOut,
}

impl Closing {
    /// Every reason, in counter order.
    pub const ALL: [Closing; 8] = [
        Closing::Fin,
        Closing::Reset,
        Closing::KeepAlive,
        Closing::Frame,
        Closing::Unregistered,
        Closing::ClanOutOfService,
        Closing::ConnectFailed,
        Closing::ConnectTimedOut,
    ];

    /// The label `/metrics` shows.
    pub fn name(self) -> &'static str {
        match self {
            Closing::Fin => "fin",
            Closing::Reset => "reset",
            Closing::KeepAlive => "keepalive",
            Closing::Frame => "frame",
            Closing::Unregistered => "unregistered",
            Closing::ClanOutOfService => "clan_out_of_service",
            Closing::ConnectFailed => "connect_failed",
            Closing::ConnectTimedOut => "connect_timed_out",
        }
    }
}

/// Where a registered phone's socket stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SocketState {
    /// Count mode: the socket is counted, nothing is open.
    Counted,
    /// Socket mode, non-TTS: a place is held; the phone has not connected yet.
    Waiting,
    /// Socket mode, TTS: a place is held; its set-up waits for a free slot on the C-LAN.
    Queued,
    /// Socket mode, TTS: the gatekeeper's connect is in progress.
    Connecting,
    /// Socket mode: the connection is up and its establishment (`setup_ms`) runs.
    Setup,
    /// Socket mode: the socket is established.
    Established,
    /// Socket mode, TTS: the phone closed its last socket without using it
    /// (docs/rules.md §8.6); it is set up again after its back-off.
    Declined,
    /// No socket and no place (a TTS phone waiting for room or its next round, a non-TTS
    /// phone whose socket closed).
    #[default]
    None,
}

impl SocketState {
    /// The label the admin port shows.
    pub fn name(self) -> &'static str {
        match self {
            SocketState::Counted => "counted",
            SocketState::Waiting => "waiting",
            SocketState::Queued => "queued",
            SocketState::Connecting => "connecting",
            SocketState::Setup => "setup",
            SocketState::Established => "established",
            SocketState::Declined => "declined",
            SocketState::None => "none",
        }
    }
}

/// One phone's socket in socket mode.
#[derive(Debug, Clone)]
pub(super) struct PhoneSocket {
    pub state: Phase,
    /// When its RCF was sent, until its first socket is established (time to service).
    pub since_rcf: Option<Instant>,
    /// TTS: the C-LANs tried in this round of its set-up.
    pub tried: Vec<ClanIdx>,
    /// TTS: the wait before its next round when this one fails.
    pub backoff: Duration,
    /// When its socket was last established.
    pub established_at: Option<Instant>,
    /// A routed call ran on its socket since the socket was established
    /// (docs/rules.md §8.7): a socket it then closes was used, not declined.
    pub carried_call: bool,
    /// TTS: sockets it declined (docs/rules.md §8.6).
    pub declines: u32,
    /// TTS: its last socket was declined, and it waits for its next round.
    pub declined: bool,
    /// TTS: that its socket cannot be opened (every connect of a round failed) was logged.
    pub unreachable_logged: bool,
    /// Its RAS source IP.
    pub ip: IpAddr,
    /// Routed calls: its connection was (or is being) opened by the gatekeeper for a call
    /// to it (docs/rules.md §8.7), so the call's Setup is the first thing written on it.
    pub for_call: bool,
}

impl PhoneSocket {
    /// A phone at `ip` with no socket yet, its time to service counted from `since_rcf`.
    pub fn new(since_rcf: Option<Instant>, ip: IpAddr) -> PhoneSocket {
        PhoneSocket {
            state: Phase::None,
            since_rcf,
            tried: Vec::new(),
            backoff: TTS_BACKOFF_FIRST,
            established_at: None,
            carried_call: false,
            declines: 0,
            declined: false,
            unreachable_logged: false,
            ip,
            for_call: false,
        }
    }
}

/// [`SocketState`] with what each state holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Waiting(ClanIdx),
    Queued(ClanIdx),
    Connecting(ClanIdx, ConnectionId, Instant),
    Setup(ClanIdx, ConnectionId, Instant),
    Established(ClanIdx, ConnectionId),
    None,
}

impl Phase {
    pub fn state(self) -> SocketState {
        match self {
            Phase::Waiting(_) => SocketState::Waiting,
            Phase::Queued(_) => SocketState::Queued,
            Phase::Connecting(..) => SocketState::Connecting,
            Phase::Setup(..) => SocketState::Setup,
            Phase::Established(..) => SocketState::Established,
            Phase::None => SocketState::None,
        }
    }

    /// The connection it has, if any.
    pub fn connection(self) -> Option<ConnectionId> {
        match self {
            Phase::Connecting(_, id, _) | Phase::Setup(_, id, _) | Phase::Established(_, id) => {
                Some(id)
            }
            _ => None,
        }
    }

    /// The C-LAN holding its place, if any.
    pub fn clan(self) -> Option<ClanIdx> {
        match self {
            Phase::Waiting(clan)
            | Phase::Queued(clan)
            | Phase::Connecting(clan, ..)
            | Phase::Setup(clan, ..)
            | Phase::Established(clan, _) => Some(clan),
            Phase::None => None,
        }
    }

    /// Does it occupy one of its C-LAN's establishment slots?
    pub fn in_setup(self) -> bool {
        matches!(self, Phase::Connecting(..) | Phase::Setup(..))
    }
}

/// One C-LAN's sockets.
#[derive(Debug, Clone, Default)]
pub(super) struct ClanSockets {
    /// Established sockets.
    pub established: u32,
    /// Establishments in progress (TTS connects and connections within `setup_ms`).
    pub setups: u32,
    /// TTS phones whose set-up waits for a slot, in order (entries that left the queue
    /// otherwise are skipped when reached).
    pub queue: VecDeque<u64>,
    /// How many of `queue` still wait.
    pub queued: u32,
}

/// A deadline of socket mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum SocketTimer {
    /// An establishment's `setup_ms` is over.
    SetupDone(ConnectionId),
    /// A TTS connect's `setup_timeout_ms` is over.
    ConnectTimeout(ConnectionId),
    /// A TTS phone's next round.
    Retry(u64),
}

/// Counters of socket mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SocketStats {
    /// Connections refused at once, by reason.
    pub refused: BTreeMap<Refusal, u64>,
    /// Sockets and set-ups that ended, by reason.
    pub closed: BTreeMap<Closing, u64>,
    /// Sockets established.
    pub established: u64,
    /// TTS connects started.
    pub connects: u64,
    /// Service frames written: one per socket established for a phone that asked for it.
    pub service_frames: u64,
    /// TTS sockets declined: closed by the phone without being used (docs/rules.md §8.6).
    pub declines: u64,
    /// Octets phones sent on their sockets.
    pub octets: u64,
    /// TPKT frames phones sent on their sockets.
    pub frames: u64,
    /// RCF → established socket, TTS phones.
    pub time_to_service_tts: LatencyHistogram,
    /// RCF → established socket, non-TTS phones.
    pub time_to_service_other: LatencyHistogram,
}

/// Everything socket mode keeps.
#[derive(Debug, Default)]
pub(super) struct Signalling {
    /// Per registration key.
    pub phones: HashMap<u64, PhoneSocket>,
    /// Which registration a connection belongs to.
    pub connections: HashMap<ConnectionId, u64>,
    /// Per C-LAN, in configuration order.
    pub clans: Vec<ClanSockets>,
    /// Non-TTS phones that may connect: (C-LAN registered at, RAS source IP, key).
    pub waiting: BTreeSet<(ClanIdx, IpAddr, u64)>,
    /// The C-LAN each signalling address belongs to.
    pub clan_at: HashMap<SocketAddr, ClanIdx>,
    /// Registered phones per RAS source IP.
    pub ips: HashMap<IpAddr, u32>,
    pub timers: BTreeSet<(Instant, SocketTimer)>,
    /// TTS connects the core gave up on (timed out, or their phone left) whose sockets the
    /// glue has not yet reported closed: each still holds its C-LAN's establishment slot,
    /// since in the OS it is still a connection attempt from that C-LAN.
    pub abandoned: HashMap<ConnectionId, ClanIdx>,
    pub commands: Vec<Command>,
    pub stats: SocketStats,
    next_id: u64,
}

impl Signalling {
    /// Empty, for C-LANs at these signalling addresses.
    ///
    /// One entry per C-LAN, whatever their addresses: in count mode two C-LANs may share a
    /// signalling address (an IP with two RAS ports), and a table sized by the distinct
    /// addresses lost the last C-LANs from every view zipped with it. (Socket mode refuses a
    /// shared signalling address, so the address's first C-LAN is the one it names.)
    /// Each C-LAN's signalling addresses are those of its RAS addresses (a dual-stack board
    /// listens on both).
    pub fn new(clans: &[crate::config::Clan]) -> Signalling {
        let mut clan_at: HashMap<SocketAddr, ClanIdx> = HashMap::new();
        for (idx, clan) in clans.iter().enumerate() {
            for address in clan.signal_addresses() {
                clan_at.entry(address).or_insert(idx);
            }
        }
        let clans = clans.len();
        Signalling {
            clans: vec![ClanSockets::default(); clans],
            clan_at,
            ..Signalling::default()
        }
    }

    /// Numbers connections on from where `old` stopped.
    pub fn continue_ids(&mut self, old: &Signalling) {
        self.next_id = self.next_id.max(old.next_id);
    }

    pub fn new_id(&mut self) -> ConnectionId {
        self.next_id += 1;
        ConnectionId(self.next_id)
    }

    pub fn refuse(&mut self, reason: Refusal) {
        *self.stats.refused.entry(reason).or_default() += 1;
    }

    pub fn count_closed(&mut self, reason: Closing) {
        *self.stats.closed.entry(reason).or_default() += 1;
    }

    /// The state a registration's socket is in.
    pub fn phase(&self, key: u64) -> Phase {
        self.phones.get(&key).map_or(Phase::None, |p| p.state)
    }

    /// Sets a phone's phase, keeping the C-LANs' counters, the connection index and the
    /// waiting set in step with it (the phone must be known).
    pub fn set_phase(&mut self, key: u64, next: Phase, waiting_at: Option<(ClanIdx, IpAddr)>) {
        let Some(phone) = self.phones.get_mut(&key) else {
            return;
        };
        let before = std::mem::replace(&mut phone.state, next);
        if let Some(clan) = before.clan() {
            let sockets = &mut self.clans[clan];
            match before {
                Phase::Queued(_) => sockets.queued = sockets.queued.saturating_sub(1),
                Phase::Established(..) => {
                    sockets.established = sockets.established.saturating_sub(1)
                }
                _ if before.in_setup() => sockets.setups = sockets.setups.saturating_sub(1),
                _ => {}
            }
        }
        if let Some(id) = before.connection() {
            if next.connection() != Some(id) {
                self.connections.remove(&id);
            }
        }
        if let Some(clan) = next.clan() {
            let sockets = &mut self.clans[clan];
            match next {
                Phase::Queued(_) => {
                    sockets.queued += 1;
                    sockets.queue.push_back(key);
                }
                Phase::Established(..) => sockets.established += 1,
                _ if next.in_setup() => sockets.setups += 1,
                _ => {}
            }
        }
        if let Some(id) = next.connection() {
            self.connections.insert(id, key);
        }
        // The waiting set: non-TTS phones in Waiting or None (given `waiting_at`).
        if let Some((clan, ip)) = waiting_at {
            if matches!(next, Phase::Waiting(_) | Phase::None) {
                self.waiting.insert((clan, ip, key));
            } else {
                self.waiting.remove(&(clan, ip, key));
            }
        }
    }

    /// Takes in a registered phone (a registration again replaces what it had).
    pub fn add_phone(&mut self, key: u64, phone: PhoneSocket) {
        let ip = phone.ip;
        if let Some(before) = self.phones.insert(key, phone) {
            self.uncount(before.ip);
        }
        *self.ips.entry(ip).or_default() += 1;
    }

    fn uncount(&mut self, ip: IpAddr) {
        if let Some(count) = self.ips.get_mut(&ip) {
            *count -= 1;
            if *count == 0 {
                self.ips.remove(&ip);
            }
        }
    }

    /// Forgets a phone (its registration ended), returning what it was in.
    pub fn forget(&mut self, key: u64, waiting_at: Option<(ClanIdx, IpAddr)>) -> Phase {
        let phase = self.phase(key);
        self.set_phase(key, Phase::None, None);
        if let Some((clan, ip)) = waiting_at {
            self.waiting.remove(&(clan, ip, key));
        }
        if let Some(phone) = self.phones.remove(&key) {
            self.uncount(phone.ip);
        }
        phase
    }

    /// A connect given up on keeps its slot on `clan` until the glue reports it gone.
    pub fn abandon(&mut self, id: ConnectionId, clan: ClanIdx) {
        self.clans[clan].setups += 1;
        self.abandoned.insert(id, clan);
    }

    /// The glue reported an abandoned connect gone: its slot is free; its C-LAN.
    pub fn release(&mut self, id: ConnectionId) -> Option<ClanIdx> {
        let clan = self.abandoned.remove(&id)?;
        self.clans[clan].setups = self.clans[clan].setups.saturating_sub(1);
        Some(clan)
    }

    /// The soonest deadline.
    pub fn next_timer(&self) -> Option<Instant> {
        self.timers.first().map(|&(at, _)| at)
    }

    /// The non-TTS phone an accepted connection from `ip` on `clan` belongs to: the first
    /// (lowest key) holding a place there, else the first without a place. `true` with it
    /// when it holds its place.
    pub fn claimant(&self, clan: ClanIdx, ip: IpAddr) -> Option<(u64, bool)> {
        let mut without = None;
        for &(_, _, key) in self.waiting.range((clan, ip, 0)..=(clan, ip, u64::MAX)) {
            match self.phase(key) {
                Phase::Waiting(at) if at == clan => return Some((key, true)),
                Phase::None if without.is_none() => without = Some(key),
                _ => {}
            }
        }
        without.map(|key| (key, false))
    }
}
