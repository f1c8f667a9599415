//! Binding RAS sockets with the options a gatekeeper under a registration storm needs
//! (large receive and send buffers), through `socket2`; `rasgk serve` binds its C-LANs'
//! sockets here and `rasgk storm` its phones', and both raise the open-file limit here.
//!
//! When 40,000 phones send their GRQ at once, they all land on the discovery socket before
//! the gatekeeper has read the first: with the kernel's usual ceiling (`net.core.rmem_max`,
//! 4 MB here) about 5,000 small datagrams fit and the rest are dropped, each costing its
//! phone a RAS timeout. Where the process may (`CAP_NET_ADMIN`, e.g. root),
//! `SO_RCVBUFFORCE` asks for [`FORCED_RECEIVE_BYTES`] past that ceiling.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

use crate::gatekeeper::{MULTICAST_GROUP, MULTICAST_PORT};

/// Socket buffer size asked for; the kernel may grant less (`net.core.rmem_max`).
const BUFFER_BYTES: usize = 4 << 20;

/// Receive buffer asked for past `net.core.rmem_max` where the process may: room for about
/// 80,000 queued RAS requests.
const FORCED_RECEIVE_BYTES: usize = 64 << 20;

/// Sets an integer socket option that `socket2` does not name (setsockopt(2)): true when
/// the kernel took it.
#[cfg(unix)]
pub(crate) fn set_int_option(
    socket: &impl std::os::fd::AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> bool {
    // SAFETY: setsockopt reads `size_of::<c_int>()` octets from a live c_int, on a
    // descriptor the caller holds open.
    let done = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    done == 0
}

/// `SO_RCVBUFFORCE`: true when the kernel took it.
#[cfg(target_os = "linux")]
fn force_receive_buffer(socket: &Socket, bytes: usize) -> bool {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    set_int_option(socket, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, value)
}

#[cfg(not(target_os = "linux"))]
fn force_receive_buffer(_socket: &Socket, _bytes: usize) -> bool {
    false
}

/// A non-blocking UDP socket of `domain`, not bound, with the large buffers (the storm's
/// phones' port uses it too).
pub(crate) fn udp(domain: Domain) -> io::Result<Socket> {
    let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: a smaller buffer only means drops under heavier load.
    if !force_receive_buffer(&socket, FORCED_RECEIVE_BYTES) {
        let _ = socket.set_recv_buffer_size(BUFFER_BYTES);
    }
    let _ = socket.set_send_buffer_size(BUFFER_BYTES);
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// A UDP socket bound to one address.
pub fn bind_udp(address: SocketAddr) -> io::Result<UdpSocket> {
    let socket = udp(Domain::for_address(address))?;
    socket.bind(&address.into())?;
    UdpSocket::from_std(socket.into())
}

/// A UDP socket on port 1718 that has joined 224.0.1.41 on the interface of `interface`
/// (any interface when it is not IPv4).
pub fn bind_multicast(interface: IpAddr) -> io::Result<UdpSocket> {
    let socket = udp(Domain::IPV4)?;
    socket.set_reuse_address(true)?;
    let any = SocketAddr::from((Ipv4Addr::UNSPECIFIED, MULTICAST_PORT));
    socket.bind(&any.into())?;
    let interface = match interface {
        IpAddr::V4(ip) => ip,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    };
    socket.join_multicast_v4(&MULTICAST_GROUP, &interface)?;
    UdpSocket::from_std(socket.into())
}

/// Raises this process's soft open-file limit to its hard limit (every signalling socket and
/// every storm phone's connection is a descriptor); returns the (soft, hard) limits now in
/// force (the soft one unchanged when the system refused to raise it).
#[cfg(unix)]
pub fn raise_open_file_limit() -> io::Result<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `limit`, which lives across the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit from `raised`, which lives across the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    #[allow(clippy::useless_conversion)] // rlim_t is u64 on Linux, not everywhere
    let pair = (
        u64::try_from(limit.rlim_cur).unwrap_or(u64::MAX),
        u64::try_from(limit.rlim_max).unwrap_or(u64::MAX),
    );
    Ok(pair)
}

/// Without rlimits there is nothing to raise.
#[cfg(not(unix))]
pub fn raise_open_file_limit() -> io::Result<(u64, u64)> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no open-file limit here",
    ))
}
