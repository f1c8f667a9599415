//! What happened, for people watching: registrations, unregistrations, expiries, rejects,
//! C-LAN changes, `warn_sockets` warnings, rebalancing moves and routed calls, as a bounded queue the server drains after each call into the core and
//! streams on the admin port (`/api/events`).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use crate::config::RegionId;
use crate::ras::avaya::AvayaEndpoint;
use crate::ras::PackedAliases;

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
        endpoint_id: EndpointKey,
        /// Its aliases as text.
        aliases: AliasTexts,
        /// Home region.
        region: RegionId,
        /// The C-LAN of its socket (`None`: a TTS phone waiting for one).
        clan: Option<Arc<str>>,
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
        endpoint_id: EndpointKey,
        /// Why.
        reason: Ending,
        /// The C-LAN whose socket was freed, if any.
        clan: Option<Arc<str>>,
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

/// The `endpointIdentifier` of a registration and full re-registration event: the
/// registry's key, written out as the identifier's text (`EP0000002A`) only when the event
/// is serialised — on the admin port's thread, for a watcher — and not for every RRQ on the
/// gatekeeper's, which made a string of it for each (events of rarer kinds carry the text).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EndpointKey(pub u64);

impl fmt::Display for EndpointKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EP{:08X}", self.0)
    }
}

impl fmt::Debug for EndpointKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

impl serde::Serialize for EndpointKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A registration's aliases in an event, as the registration holds them (packed, most
/// often in place: a copy allocates nothing), serialised as a list of their texts.
#[derive(Clone, PartialEq, Eq)]
pub struct AliasTexts(pub PackedAliases);

impl fmt::Debug for AliasTexts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|alias| alias.to_string()))
            .finish()
    }
}

impl serde::Serialize for AliasTexts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|alias| alias.to_string()))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ras::Alias;

    #[test]
    fn a_registration_event_is_written_as_text_only_when_serialised() {
        let aliases = [
            Alias::DialledDigits("50001".into()),
            Alias::H323Id("Desk 1".into()),
        ];
        let event = Event::Registered {
            endpoint_id: EndpointKey(0x2A),
            aliases: AliasTexts(PackedAliases::from(&aliases[..])),
            region: 2,
            clan: Some(Arc::from("clan-a")),
            tts: false,
            avaya: None,
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            serde_json::json!({
                "type": "registered",
                "endpoint_id": "EP0000002A",
                "aliases": ["50001", "h323-ID:Desk 1"],
                "region": 2,
                "clan": "clan-a",
                "tts": false,
            })
        );
        let ended = Event::Unregistered {
            endpoint_id: EndpointKey(0x1_0000_0000),
            reason: Ending::Reregistered,
            clan: None,
        };
        assert_eq!(
            serde_json::to_value(&ended).unwrap(),
            serde_json::json!({
                "type": "unregistered",
                "endpoint_id": "EP100000000",
                "reason": "reregistered",
                "clan": null,
            })
        );
        assert_eq!(
            super::super::registry::endpoint_id_text(0x2A),
            EndpointKey(0x2A).to_string(),
            "the same text as the endpointIdentifier the RCF gave"
        );
        assert!(format!("{event:?}").contains("\"EP0000002A\""));
    }
}
