//! A registration's `rasAddress` and `callSignalAddress`, held as two ports beside its RAS
//! source when they are on the source's host, as a phone's nearly always are.
//!
//! Held as they came, the two took 64 octets of each of 100,000 registrations, repeating
//! the source's address twice. On the source's host (the same IP address, and for IPv6 the
//! same flow label and scope) with one call signalling address, they are its two ports;
//! otherwise (a phone behind NAT, a gateway with several addresses) they are kept whole in
//! a block of their own. Read back, they are exactly what the RRQ said.

use std::net::SocketAddr;
use std::ops::Deref;

/// The `callSignalAddress` list of a registration: nearly always one address, held inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallSignalAddresses {
    /// The one address.
    One(SocketAddr),
    /// None, or more than one.
    Many(Box<[SocketAddr]>),
}

impl From<Vec<SocketAddr>> for CallSignalAddresses {
    fn from(addresses: Vec<SocketAddr>) -> Self {
        addresses.into_iter().collect()
    }
}

impl FromIterator<SocketAddr> for CallSignalAddresses {
    /// One address is held inline without a vector on the way.
    fn from_iter<I: IntoIterator<Item = SocketAddr>>(addresses: I) -> Self {
        let mut addresses = addresses.into_iter();
        let Some(first) = addresses.next() else {
            return CallSignalAddresses::Many(Box::new([]));
        };
        match addresses.next() {
            None => CallSignalAddresses::One(first),
            Some(second) => {
                let mut all = vec![first, second];
                all.extend(addresses);
                CallSignalAddresses::Many(all.into_boxed_slice())
            }
        }
    }
}

impl Deref for CallSignalAddresses {
    type Target = [SocketAddr];

    fn deref(&self) -> &[SocketAddr] {
        match self {
            CallSignalAddresses::One(one) => std::slice::from_ref(one),
            CallSignalAddresses::Many(many) => many,
        }
    }
}

/// The `rasAddress` and `callSignalAddress` of a registration, read against its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointAddresses {
    /// Both on the source's host: their ports.
    OnSource {
        /// The port of `rasAddress`.
        ras_port: u16,
        /// The port of the one `callSignalAddress`.
        signal_port: u16,
    },
    /// Anything else, whole.
    Elsewhere(Box<(SocketAddr, CallSignalAddresses)>),
}

/// `address` with `source`'s port: the same host?
fn on_host_of(source: SocketAddr, address: SocketAddr) -> bool {
    let mut moved = source;
    moved.set_port(address.port());
    moved == address
}

impl EndpointAddresses {
    /// The addresses of a registration from `source`.
    pub fn new(
        source: SocketAddr,
        ras_address: SocketAddr,
        call_signal_address: CallSignalAddresses,
    ) -> EndpointAddresses {
        match call_signal_address {
            CallSignalAddresses::One(signal)
                if on_host_of(source, ras_address) && on_host_of(source, signal) =>
            {
                EndpointAddresses::OnSource {
                    ras_port: ras_address.port(),
                    signal_port: signal.port(),
                }
            }
            other => EndpointAddresses::Elsewhere(Box::new((ras_address, other))),
        }
    }

    /// `rasAddress`, of a registration from `source`.
    pub fn ras_address(&self, source: SocketAddr) -> SocketAddr {
        match self {
            EndpointAddresses::OnSource { ras_port, .. } => {
                let mut address = source;
                address.set_port(*ras_port);
                address
            }
            EndpointAddresses::Elsewhere(held) => held.0,
        }
    }

    /// `callSignalAddress`, of a registration from `source`.
    pub fn call_signal_address(&self, source: SocketAddr) -> CallSignalAddresses {
        match self {
            EndpointAddresses::OnSource { signal_port, .. } => {
                let mut address = source;
                address.set_port(*signal_port);
                CallSignalAddresses::One(address)
            }
            EndpointAddresses::Elsewhere(held) => held.1.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_signal_address_is_held_inline() {
        let one: SocketAddr = "127.0.0.1:1720".parse().unwrap();
        let two: SocketAddr = "127.0.0.2:1720".parse().unwrap();
        let single = CallSignalAddresses::from(vec![one]);
        assert_eq!(single, CallSignalAddresses::One(one));
        assert_eq!(&single[..], &[one]);
        assert_eq!(&CallSignalAddresses::from(vec![one, two])[..], &[one, two]);
        assert!(CallSignalAddresses::from(Vec::new()).is_empty());
        let three: CallSignalAddresses = [one, two, one].into_iter().collect();
        assert_eq!(&three[..], &[one, two, one]);
    }

    #[test]
    fn addresses_come_back_as_the_rrq_gave_them() {
        let cases = [
            (
                "10.0.0.1:1719",
                "10.0.0.1:1719",
                vec!["10.0.0.1:1720"],
                true,
            ),
            (
                "10.0.0.1:5000",
                "10.0.0.1:1719",
                vec!["10.0.0.1:1720"],
                true,
            ),
            (
                "[fe80::1%2]:1719",
                "[fe80::1%2]:1719",
                vec!["[fe80::1%2]:1720"],
                true,
            ),
            (
                "[fe80::1%2]:1719",
                "[fe80::1%3]:1719",
                vec!["[fe80::1%2]:1720"],
                false,
            ),
            (
                "10.0.0.1:1719",
                "192.168.1.5:1719",
                vec!["10.0.0.1:1720"],
                false,
            ),
            (
                "10.0.0.1:1719",
                "10.0.0.1:1719",
                vec!["192.168.1.5:1720"],
                false,
            ),
            ("10.0.0.1:1719", "10.0.0.1:1719", vec![], false),
            (
                "10.0.0.1:1719",
                "10.0.0.1:1719",
                vec!["10.0.0.1:1720", "10.0.0.1:1721"],
                false,
            ),
            (
                "10.0.0.1:1719",
                "[::ffff:10.0.0.1]:1719",
                vec!["10.0.0.1:1720"],
                false,
            ),
        ];
        for (source, ras, signal, on_source) in cases {
            let source: SocketAddr = source.parse().unwrap();
            let ras: SocketAddr = ras.parse().unwrap();
            let signal: Vec<SocketAddr> = signal.iter().map(|a| a.parse().unwrap()).collect();
            let held = EndpointAddresses::new(source, ras, signal.clone().into());
            assert_eq!(
                matches!(held, EndpointAddresses::OnSource { .. }),
                on_source,
                "{source} {ras}"
            );
            assert_eq!(held.ras_address(source), ras);
            assert_eq!(&held.call_signal_address(source)[..], &signal[..]);
        }
        assert_eq!(std::mem::size_of::<EndpointAddresses>(), 16);
    }
}
