//! TCP sockets as the OS sees them (`/proc/net/tcp` and `/proc/net/tcp6`): the outside count
//! that socket mode's tests hold the gatekeeper's own figures against.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// `ESTABLISHED` in `/proc/net/tcp`'s `st` column.
pub const ESTABLISHED: u8 = 0x01;
/// `SYN_SENT`.
pub const SYN_SENT: u8 = 0x02;

/// Every TCP socket of this machine's network namespace, IPv4 then IPv6: (local, remote,
/// state). A host without IPv6 has no `/proc/net/tcp6`, and so no IPv6 sockets.
pub fn sockets() -> Vec<(SocketAddr, SocketAddr, u8)> {
    let v4 = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp is readable");
    let v6 = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    [v4, v6]
        .iter()
        .flat_map(|text| text.lines().skip(1))
        .filter_map(|line| {
            let mut fields = line.split_whitespace().skip(1);
            let local = address(fields.next()?)?;
            let remote = address(fields.next()?)?;
            let state = u8::from_str_radix(fields.next()?, 16).ok()?;
            Some((local, remote, state))
        })
        .collect()
}

/// `0100007F:06B8` → 127.0.0.1:1720, and the 32 digits of an IPv6 address likewise: the
/// kernel prints the address as 32-bit words, each in host byte order.
fn address(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let mut octets = Vec::with_capacity(16);
    for word in 0..ip.len() / 8 {
        let word = u32::from_str_radix(ip.get(word * 8..word * 8 + 8)?, 16).ok()?;
        octets.extend_from_slice(&word.to_ne_bytes());
    }
    let ip = match octets.len() {
        4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(octets).ok()?)),
        16 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(octets).ok()?)),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Sockets in `state` whose local IP is one of `ips`, counted per IP.
pub fn count_by_local_ip(ips: &[IpAddr], state: u8) -> BTreeMap<IpAddr, usize> {
    let mut counts: BTreeMap<IpAddr, usize> = ips.iter().map(|&ip| (ip, 0)).collect();
    for (local, _, st) in sockets() {
        if st == state {
            if let Some(count) = counts.get_mut(&local.ip()) {
                *count += 1;
            }
        }
    }
    counts
}

/// Sockets in `state` whose local IP is one of `ips`, counted per IP, counting only the
/// sockets that two reads in a row both show: one read of `/proc/net/tcp` is not atomic, so
/// a socket that leaves the state while the read goes on can be seen beside the one that
/// took its place, though the two never were at once.
pub fn count_by_local_ip_steady(ips: &[IpAddr], state: u8) -> BTreeMap<IpAddr, usize> {
    let pick = || -> std::collections::BTreeSet<(SocketAddr, SocketAddr)> {
        sockets()
            .into_iter()
            .filter(|(local, _, st)| *st == state && ips.contains(&local.ip()))
            .map(|(local, remote, _)| (local, remote))
            .collect()
    };
    let (first, second) = (pick(), pick());
    let mut counts: BTreeMap<IpAddr, usize> = ips.iter().map(|&ip| (ip, 0)).collect();
    for (local, _) in first.intersection(&second) {
        *counts.entry(local.ip()).or_default() += 1;
    }
    counts
}
