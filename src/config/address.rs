//! The `ip:port` fields of the file (discovery, C-LAN, admin, node and trunk addresses),
//! read the one way every section reads them.

use std::net::SocketAddr;

use super::error::Fault;

/// An "ip:port" address (IPv6 in brackets).
pub(super) fn address(field: &str, text: &str) -> Result<SocketAddr, Fault> {
    text.parse::<SocketAddr>().map_err(|_| {
        Fault::new(
            field,
            format!(
                "{text:?} is not an ip:port address such as \"127.0.0.1:1719\" or \"[::1]:1719\""
            ),
        )
    })
}
