//! What happened, for people watching: registrations, unregistrations, expiries, rejects,
//! C-LAN changes, `warn_sockets` warnings, rebalancing moves and routed calls, as a bounded queue the server drains after each call into the core and
//! streams on the admin port (`/api/events`).

use std::collections::VecDeque;

use crate::config::RegionId;
use crate::ras::avaya::AvayaEndpoint;

/// Most events kept undrained; older ones are dropped (and counted).
pub const MAX_QUEUED: usize = 4096;

/// Why a registration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// The endpoint sent URQ.
    Urq,
    /// Its time to live ran out.
    Ttl,
    /// Its socket's C-LAN went out of service (gatekeeper-sent URQ).
    ClanOutOfService,
    /// An administrator unregistered it (gatekeeper-sent URQ).
    Admin,
    /// It registered again in full (the old registration is replaced).
    Reregistered,
    /// A configuration reload removed its C-LAN or region (gatekeeper-sent URQ).
    Reconfigured,
    /// Rebalancing moved it off a crowded C-LAN (gatekeeper-sent URQ, docs/rules.md §9.2).
    Rebalanced,
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// An RCF to a full RRQ.
    Registered {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// Its aliases as text.
        aliases: Vec<String>,
        /// Home region.
        region: RegionId,
        /// The C-LAN of its socket (`None`: a TTS phone waiting for one).
        clan: Option<String>,
        /// A TTS phone?
        tts: bool,
        /// An Avaya endpoint, with the MAC address its login request gave (left out for
        /// other endpoints).
        #[serde(skip_serializing_if = "Option::is_none")]
        avaya: Option<AvayaEndpoint>,
    },
    /// A TTS phone that waited got its socket.
    TtsSocket {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// The C-LAN of its socket.
        clan: String,
    },
    /// Socket mode: a phone's socket was established.
    SocketEstablished {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// The C-LAN of the socket.
        clan: String,
    },
    /// Socket mode: a registered phone's socket (or its establishment) closed; the phone
    /// stays registered without one.
    SocketClosed {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// The C-LAN whose place was freed.
        clan: String,
        /// Why.
        reason: super::signalling::Closing,
    },
    /// A registration ended.
    Unregistered {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// Why.
        reason: Ending,
        /// The C-LAN whose socket was freed, if any.
        clan: Option<String>,
    },
    /// A reject was sent.
    Rejected {
        /// `GRJ`, `RRJ`, …
        message: &'static str,
        /// The ASN.1 name of the reason.
        reason: &'static str,
    },
    /// An IRR answered a gatekeeper-sent IRQ.
    InfoResponse {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// The IRQ's (and the IRR's) `requestSeqNum`.
        seq: u16,
        /// From the IRQ sent to its IRR, milliseconds.
        after_ms: u64,
    },
    /// A C-LAN went into or out of service.
    ClanState {
        /// Its name.
        clan: String,
        /// In service now?
        in_service: bool,
    },
    /// A C-LAN's cap changed.
    ClanCap {
        /// Its name.
        clan: String,
        /// The new cap.
        max_sockets: u32,
    },
    /// Rebalancing moved a phone (docs/rules.md §9.2): a gatekeeper-sent URQ whose AGL leads
    /// with the lighter C-LAN, where a place is reserved for it.
    Rebalanced {
        /// Its `endpointIdentifier` (the registration the URQ ended).
        endpoint_id: String,
        /// Its first alias, if any.
        alias: Option<String>,
        /// The C-LAN it was moved off.
        from: String,
        /// The C-LAN it was sent to.
        to: String,
    },
    /// A C-LAN's load reached its `warn_sockets` (`warning: true`), or fell back below it
    /// by the hysteresis (`false`); once per crossing (`gatekeeper::warnings`).
    ClanWarning {
        /// Its name.
        clan: String,
        /// Does the warning stand now?
        warning: bool,
        /// Its load (sockets + reservations) at the crossing.
        load: u32,
        /// Its `warn_sockets`.
        warn_sockets: u32,
    },
    /// Routed calls (docs/rules.md §8.7): a Setup made a call, relayed to its callee (or held
    /// for the callee's connection).
    CallSetup {
        /// The call's number in `/api/calls`.
        call: u64,
        /// The caller's `endpointIdentifier`.
        caller: String,
        /// The callee's.
        callee: String,
        /// The C-LAN of the caller's leg.
        clan: String,
    },
    /// The callee of a routed call answered (Connect).
    CallConnected {
        /// The call's number.
        call: u64,
        /// From the Setup to the Connect, microseconds.
        setup_to_connect_us: u64,
    },
    /// A routed call ended (or a Setup made none: then `call` is 0).
    CallEnded {
        /// The call's number.
        call: u64,
        /// Why.
        reason: super::relay::CallEnd,
        /// How long it was connected, milliseconds (0: never answered).
        duration_ms: u64,
    },
}

/// The undrained events, oldest first.
#[derive(Debug, Default)]
pub struct EventQueue {
    queue: VecDeque<Event>,
    /// Events dropped because nobody drained them in time.
    pub dropped: u64,
    /// Nobody is watching (the server says so when no `/api/events` client is connected):
    /// events are not kept, and the hot paths do not build them.
    unwatched: bool,
}

impl EventQueue {
    /// Adds an event, dropping the oldest when full; nothing while nobody watches.
    pub fn push(&mut self, event: Event) {
        if self.unwatched {
            return;
        }
        if self.queue.len() >= MAX_QUEUED {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back(event);
    }

    /// Is anybody watching? (Yes unless told otherwise.)
    pub fn watched(&self) -> bool {
        !self.unwatched
    }

    /// Whether anybody watches from now on; when nobody does, queued events are dropped.
    pub fn set_watched(&mut self, watched: bool) {
        self.unwatched = !watched;
        if !watched {
            self.queue.clear();
        }
    }

    /// Takes every queued event.
    pub fn drain(&mut self) -> impl Iterator<Item = Event> + '_ {
        self.queue.drain(..)
    }
}
