//! What the gatekeeper's event stream tells the exam: a registration, its socket, a lapse,
//! a routed call's Setup.

use crate::config::RegionId;

/// Something the gatekeeper's event stream said about an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Happening {
    /// Its registration lapsed: no keep-alive within its time to live.
    Lapsed {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
    },
    /// Registered, TTS or not (socket mode: a TTS phone waits for the gatekeeper's socket).
    Registered {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// A TTS phone.
        tts: bool,
        /// The C-LAN of its socket (for a TTS phone, the one the gatekeeper chose), if
        /// it has one yet.
        clan: Option<String>,
        /// Its home region.
        region: Option<RegionId>,
    },
    /// Its socket was established (the phone's connection, or the gatekeeper's to a TTS
    /// phone).
    SocketEstablished {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// The C-LAN of the socket.
        clan: Option<String>,
    },
    /// Its socket closed while it stayed registered.
    SocketClosed {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// Why (`declined`, `peer_closed`, …).
        reason: String,
    },
    /// Routed calls: a Setup arrived on a C-LAN and made a call.
    CallSetup {
        /// The caller's `endpointIdentifier`.
        endpoint_id: String,
        /// The callee's.
        callee: String,
        /// The call's number in `/api/calls`.
        call: u64,
        /// The C-LAN the Setup arrived on.
        clan: String,
    },
    /// Routed calls: the call ended, and why (`callee_released`, `unreachable`, …).
    CallEnded {
        /// The call's number.
        call: u64,
        /// Why, as `/metrics` names it.
        reason: String,
    },
}

impl Happening {
    /// The endpoint it is about.
    pub fn endpoint_id(&self) -> &str {
        match self {
            Happening::Lapsed { endpoint_id }
            | Happening::Registered { endpoint_id, .. }
            | Happening::SocketEstablished { endpoint_id, .. }
            | Happening::SocketClosed { endpoint_id, .. }
            | Happening::CallSetup { endpoint_id, .. } => endpoint_id,
            Happening::CallEnded { .. } => "",
        }
    }

    /// The happening of one `/api/events` event (its JSON), if it is one the exam reads.
    pub fn from_json(event: &serde_json::Value) -> Option<Happening> {
        let text = |key: &str| event.get(key).and_then(|v| v.as_str()).map(str::to_string);
        let number = |key: &str| event.get(key).and_then(|v| v.as_u64());
        match event.get("type")?.as_str()? {
            "call_setup" => {
                return Some(Happening::CallSetup {
                    endpoint_id: text("caller")?,
                    callee: text("callee")?,
                    call: number("call")?,
                    clan: text("clan")?,
                })
            }
            "call_ended" => {
                return Some(Happening::CallEnded {
                    call: number("call")?,
                    reason: text("reason")?,
                })
            }
            _ => {}
        }
        let endpoint_id = text("endpoint_id")?;
        match event.get("type")?.as_str()? {
            "unregistered" if text("reason").as_deref() == Some("ttl") => {
                Some(Happening::Lapsed { endpoint_id })
            }
            "registered" => Some(Happening::Registered {
                endpoint_id,
                tts: event.get("tts").and_then(|v| v.as_bool()) == Some(true),
                clan: text("clan"),
                region: event
                    .get("region")
                    .and_then(|v| v.as_u64())
                    .and_then(|r| RegionId::try_from(r).ok()),
            }),
            "socket_established" | "tts_socket" => Some(Happening::SocketEstablished {
                endpoint_id,
                clan: text("clan"),
            }),
            "socket_closed" => Some(Happening::SocketClosed {
                endpoint_id,
                reason: text("reason").unwrap_or_default(),
            }),
            _ => None,
        }
    }
}
