//! Binding RAS sockets with the options a gatekeeper under a registration storm needs
//! (large receive and send buffers), through `socket2`.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

use crate::gatekeeper::{MULTICAST_GROUP, MULTICAST_PORT};

/// Socket buffer size asked for; the kernel may grant less (`net.core.rmem_max`).
const BUFFER_BYTES: usize = 4 << 20;

fn udp(domain: Domain) -> io::Result<Socket> {
    let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: a smaller buffer only means drops under heavier load.
    let _ = socket.set_recv_buffer_size(BUFFER_BYTES);
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
