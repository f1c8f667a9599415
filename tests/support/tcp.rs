//! TCP sockets as the OS sees them (`/proc/net/tcp`): the outside count that socket mode's
//! tests hold the gatekeeper's own figures against.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};

/// `ESTABLISHED` in `/proc/net/tcp`'s `st` column.
pub const ESTABLISHED: u8 = 0x01;
/// `SYN_SENT`.
pub const SYN_SENT: u8 = 0x02;

/// Every IPv4 TCP socket of this machine's network namespace: (local, remote, state).
pub fn sockets() -> Vec<(SocketAddrV4, SocketAddrV4, u8)> {
    let text = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp is readable");
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace().skip(1);
            let local = address(fields.next()?)?;
            let remote = address(fields.next()?)?;
            let state = u8::from_str_radix(fields.next()?, 16).ok()?;
            Some((local, remote, state))
        })
        .collect()
}

/// `0100007F:06B8` → 127.0.0.1:1720 (the IP in host byte order, as the kernel prints it).
fn address(text: &str) -> Option<SocketAddrV4> {
    let (ip, port) = text.split_once(':')?;
    let ip = u32::from_str_radix(ip, 16).ok()?;
    let port = u16::from_str_radix(port, 16).ok()?;
    Some(SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(ip.to_le())),
        port,
    ))
}

/// Sockets in `state` whose local IP is one of `ips`, counted per IP.
pub fn count_by_local_ip(ips: &[Ipv4Addr], state: u8) -> BTreeMap<Ipv4Addr, usize> {
    let mut counts: BTreeMap<Ipv4Addr, usize> = ips.iter().map(|&ip| (ip, 0)).collect();
    for (local, _, st) in sockets() {
        if st == state {
            if let Some(count) = counts.get_mut(local.ip()) {
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
pub fn count_by_local_ip_steady(ips: &[Ipv4Addr], state: u8) -> BTreeMap<Ipv4Addr, usize> {
    let pick = || -> std::collections::BTreeSet<(SocketAddrV4, SocketAddrV4)> {
        sockets()
            .into_iter()
            .filter(|(local, _, st)| *st == state && ips.contains(local.ip()))
            .map(|(local, remote, _)| (local, remote))
            .collect()
    };
    let (first, second) = (pick(), pick());
    let mut counts: BTreeMap<Ipv4Addr, usize> = ips.iter().map(|&ip| (ip, 0)).collect();
    for (local, _) in first.intersection(&second) {
        *counts.entry(*local.ip()).or_default() += 1;
    }
    counts
}
