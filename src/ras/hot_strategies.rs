//! What the property tests of the hand-written codec paths ([`hot_reply`](super::hot_reply),
//! [`hot_request`](super::hot_request)) generate, and the generated codec they compare with.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use proptest::prelude::*;

use super::codec::encode_generated;
use super::reply::{AlternateGatekeeper, GatekeeperId};
use super::{Alias, RasMessage};

/// The octets of the generated codec alone.
pub(super) fn generated(message: &RasMessage) -> Vec<u8> {
    let mut octets = Vec::new();
    encode_generated(message, &mut octets).expect("the generated codec encodes it");
    octets
}

/// IPv4 and IPv6 transport addresses.
pub(super) fn address() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::from((ip, port))),
        (any::<[u8; 16]>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port)),
    ]
}

/// Aliases of the root alternatives, and `url-ID` (an extension alternative the
/// hand-written paths leave to the generated codec).
pub(crate) fn alias() -> impl Strategy<Value = Alias> {
    prop_oneof![
        "[0-9#*,]{1,128}".prop_map(|d| Alias::dialled_digits(&d).unwrap()),
        "\\PC{1,40}".prop_filter_map("BMP only", |n| Alias::h323_id(&n).ok()),
        "[a-z]{1,20}".prop_map(|u| Alias::UrlId(format!("http://{u}"))),
    ]
}

/// Gatekeeper and endpoint identifiers: long ASCII ones and short ones of any characters
/// (some of which the identifier types refuse).
pub(super) fn identifier() -> impl Strategy<Value = String> {
    prop_oneof!["[A-Za-z0-9]{1,128}", "\\PC{1,30}"]
}

/// AGL entries of up to `most` (address, named by `gatekeeper` or not, priority).
pub(super) fn agl_entries(most: usize) -> impl Strategy<Value = Vec<(SocketAddr, bool, u8)>> {
    proptest::collection::vec((address(), any::<bool>(), 0u8..128), 0..most)
}

/// The AGL of [`agl_entries`].
pub(super) fn agl(
    entries: Vec<(SocketAddr, bool, u8)>,
    gatekeeper: &GatekeeperId,
) -> Vec<AlternateGatekeeper> {
    entries
        .into_iter()
        .map(|(ras_address, named, priority)| AlternateGatekeeper {
            ras_address,
            gatekeeper_id: named.then(|| gatekeeper.clone()),
            priority,
        })
        .collect()
}
