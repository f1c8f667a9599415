//! H.225.0 RAS on the wire: the one place that knows the ASN.1 types.
//!
//! Everything else in rasgk speaks RAS through this module: [`decode`] and [`encode`] turn
//! datagrams into [`RasMessage`] values and back (ALIGNED PER, as H.225.0 requires);
//! [`kind`] and [`request_seq_num`] read any message's short name and sequence number;
//! [`reply`] builds the messages a gatekeeper sends and [`request`] those a phone sends;
//! [`Alias`] and the transport-address conversions map the ASN.1 shapes to plain Rust ones;
//! [`h235`] makes and reads the `cryptoEPPwdHash` password token, [`h235_1`] the H.235.1
//! procedure I token whose HMAC covers the whole message; [`json`] renders any message as
//! JSON.
//!
//! ```text
//!  datagram ──decode──▶ RasMessage ──(gatekeeper)──▶ RasMessage ──encode──▶ datagram
//!                        │                              ▲
//!                        └─ kind / request_seq_num      └─ reply::* constructors
//! ```
//!
//! The ASN.1 types themselves are generated from `asn1/` by `rasn-compiler` (see
//! `asn1/README.md`) and checked in as `generated.rs`; [`asn`] re-exports them. Code outside
//! this module should prefer the functions here. The exception is the gatekeeper's hot path:
//! [`hot_reply`] writes GCF and RCF straight from its values (no `RasMessage` built),
//! `decode` reads the common GRQ and RRQ shapes with a hand-written decoder, and
//! [`read_request`] hands the gatekeeper a GRQ, keep-alive or full RRQ of those shapes as
//! its few fields, built into no message.
//!
//! What this module does not do: no sockets, no clocks, no policy.

#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
mod generated;

mod address;
mod aper;
pub mod avaya;
mod codec;
pub mod h235;
pub mod h235_1;
pub(crate) mod hot_confirm;
pub(crate) mod hot_phone;
pub(crate) mod hot_reply;
mod hot_request;
#[cfg(test)]
pub(crate) mod hot_strategies;
pub mod json;
mod kind;
mod packed_aliases;
mod peek;
pub mod reply;
pub mod request;
pub mod service_frame;
mod shorten;

/// The generated ASN.1 types: H323-MESSAGES (RAS and what it reaches), and the parts of
/// H235-SECURITY-MESSAGES and MULTIMEDIA-SYSTEM-CONTROL that it imports.
pub mod asn {
    pub use super::generated::h235_security_messages as h235;
    pub use super::generated::h323_messages::*;
    pub use super::generated::multimedia_system_control as h245;
}

pub(crate) use address::{bmp_text, utf16be_text};
pub use address::{socket_addr, transport_address, Alias, AliasError, AliasView};
pub use asn::RasMessage;
pub(crate) use codec::ended_too_soon;
pub use codec::{decode, encode, encode_into, read_request, DecodeError, EncodeError};
pub use hot_request::{
    Aliases, Discovery, FullRegistration, KeepAlive, Request, TransportAddresses, Utf16,
};
pub use json::to_json;
pub use kind::{choice_name, kind, request_seq_num, MessageKind};
pub use packed_aliases::PackedAliases;
pub(crate) use peek::peek_kind;
pub use peek::{peek_request_seq_num, request_seq_num_octet, set_request_seq_num};
pub use shorten::shorten;

/// The standard RAS ports: 1719 (unicast) and 1718 (multicast discovery).
pub const RAS_PORTS: [u16; 2] = [1719, 1718];

/// `protocolIdentifier` of every message rasgk sends: itu-t(0) recommendation(0) h(8)
/// h225-0(2250) version(0) 4. Version 4 is what deployed phones and gatekeepers speak; the
/// ASN.1 in `asn1/` is version 7, which decodes every earlier version.
pub static PROTOCOL_IDENTIFIER: [u32; 6] = [0, 0, 8, 2250, 0, 4];

/// The H.225.0 protocol identifier of [`PROTOCOL_IDENTIFIER`] as an ASN.1 value.
pub fn protocol_identifier() -> asn::ProtocolIdentifier {
    asn::ProtocolIdentifier(
        rasn::types::ObjectIdentifier::new(&PROTOCOL_IDENTIFIER[..])
            .expect("0.0.8.2250.0.4 is a valid OBJECT IDENTIFIER"),
    )
}
