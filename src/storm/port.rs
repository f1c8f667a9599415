//! The phones' port: one UDP socket that every phone of a storm process sends from and
//! receives on, each with its own address.
//!
//! Storm phones are told apart by IP (127.R.x.y, or fd00:0:R::x:y over IPv6, one each), so
//! they can share the socket's port number. A phone's datagrams leave with its own IP as the source (`IP_PKTINFO`), and
//! one task, the [`Router`], reads the socket a batch at a time (`recvmmsg`) and hands each
//! datagram to the phone whose IP it was sent to. Both go through `quinn-udp`, which does
//! the control messages on every platform it knows.
//!
//! A socket a phone, as the storm had before, cost a file, an epoll registration, a wake-up
//! and two system calls per answer: under 40,000 phones, twice the CPU the gatekeeper took.
//! The socket listens on every address of the phones' family but, on Linux, is bound to the
//! loopback device, so nothing from outside the machine reaches it (elsewhere it listens on
//! every interface). An IPv6 phone's address is local only by a route ([`check_local`]),
//! not assigned to the device, so the IPv6 socket may send from addresses it has not bound
//! (`IPV6_FREEBIND`).

use std::collections::HashMap;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quinn_udp::{RecvMeta, Transmit, UdpSocketState, BATCH_SIZE};
use socket2::Domain;
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::Notify;

use crate::config::Family;
use crate::gatekeeper::MAX_DATAGRAM;

/// Octets a receive slot holds: as much as the gatekeeper reads from a phone.
const SLOT: usize = MAX_DATAGRAM + 1;

/// A datagram for a phone, where it came from, and when the kernel received it (since the
/// UNIX epoch; see [`super::stamp`]).
type Delivery = (Bytes, SocketAddr, Duration);

/// The shared socket.
pub(super) struct Port {
    socket: UdpSocket,
    state: UdpSocketState,
    port: u16,
    /// The router's progress: the last time (µs since the UNIX epoch) it found the socket
    /// empty, so that everything the kernel took in before then is in the phones' inboxes.
    emptied_us: AtomicU64,
    /// Woken each time `emptied_us` moves.
    emptied: Notify,
    /// The router waits for the socket to become readable: it found it empty and nothing
    /// has come since (as far as it knows), so no phone's datagram is waiting for it.
    parked: AtomicBool,
}

impl Port {
    /// Notes that the socket held nothing more at `at` (since the UNIX epoch).
    fn mark_emptied(&self, at: Duration) {
        self.emptied_us.fetch_max(micros(at), Ordering::Release);
        self.emptied.notify_waiters();
    }

    /// Has the router emptied the socket at `at` or later, or is it waiting for something
    /// to read?
    fn emptied_since(&self, at: Duration) -> bool {
        self.parked.load(Ordering::Acquire) || self.emptied_us.load(Ordering::Acquire) >= micros(at)
    }
}

fn micros(at: Duration) -> u64 {
    u64::try_from(at.as_micros()).unwrap_or(u64::MAX)
}

impl Port {
    /// Opens the port: `family`, any address, a port the system picks, on the loopback
    /// device. Must run inside a tokio runtime.
    pub fn open(family: Family) -> io::Result<Port> {
        let socket = crate::sockets::udp(domain(family))?;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        socket.bind_device(Some(b"lo"))?;
        if family == Family::V6 {
            socket.set_only_v6(true)?;
            may_send_from_any_address(&socket)?;
        }
        socket.bind(&SocketAddr::new(unspecified(family), 0).into())?;
        let state = UdpSocketState::new((&socket).into())?;
        let socket = UdpSocket::from_std(socket.into())?;
        let port = socket.local_addr()?.port();
        Ok(Port {
            socket,
            state,
            port,
            emptied_us: AtomicU64::new(0),
            emptied: Notify::new(),
            // Nothing has come yet.
            parked: AtomicBool::new(true),
        })
    }

    /// A line for each of `ips` (each its own), and the router that feeds them.
    pub fn lines(self, ips: impl IntoIterator<Item = IpAddr>) -> (Router, Vec<Line>) {
        let port = Arc::new(self);
        let mut routes = HashMap::new();
        let lines = ips
            .into_iter()
            .map(|ip| {
                let (tx, inbox) = unbounded_channel();
                routes.insert(ip, tx);
                Line {
                    port: port.clone(),
                    address: SocketAddr::from((ip, port.port)),
                    inbox,
                }
            })
            .collect();
        (Router { port, routes }, lines)
    }
}

/// One phone's end of the port.
pub(super) struct Line {
    port: Arc<Port>,
    address: SocketAddr,
    inbox: UnboundedReceiver<Delivery>,
}

impl Line {
    /// The phone's address: its IP, the port's port.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Sends `datagram` to `to` from the phone's address, waiting while the socket's send
    /// buffer is full.
    pub async fn send_to(&self, datagram: &[u8], to: SocketAddr) -> io::Result<()> {
        let transmit = Transmit {
            destination: to,
            ecn: None,
            contents: datagram,
            segment_size: None,
            src_ip: Some(self.address.ip()),
        };
        let port = &*self.port;
        loop {
            port.socket.writable().await?;
            match port.socket.try_io(Interest::WRITABLE, || {
                port.state.try_send((&port.socket).into(), &transmit)
            }) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                result => return result,
            }
        }
    }

    /// The next datagram sent to the phone, and its source; `None` once the router is gone.
    pub async fn recv_from(&mut self) -> Option<Delivery> {
        self.inbox.recv().await
    }

    /// The next datagram the kernel took in for the phone by `by` (since the UNIX epoch)
    /// that the router has not handed over yet; `None` once the router has emptied the
    /// socket after `by` with nothing more for this phone (or is gone).
    ///
    /// A real phone hears an answer the moment it arrives; a storm process of thousands of
    /// phones on one thread reads its socket when it gets round to it, and under a burst
    /// that is later than a phone's RAS timer. Without this, phones whose answers sit
    /// unread in the socket would time out and send again, and the storm would bury the
    /// gatekeeper under retransmissions of its own making: seen as 46,000 retransmissions
    /// and twice the time for a 40,000-phone storm on a loaded machine.
    pub async fn recv_by(&mut self, by: Duration) -> Option<Delivery> {
        let port = &*self.port;
        loop {
            let emptied = port.emptied.notified();
            tokio::pin!(emptied);
            // Registered before the checks, so a wake-up between them is not missed.
            emptied.as_mut().enable();
            match self.inbox.try_recv() {
                Ok(delivery) => return Some(delivery),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {}
            }
            if port.emptied_since(by) {
                return None;
            }
            tokio::select! {
                delivery = self.inbox.recv() => return delivery,
                () = &mut emptied => {}
            }
        }
    }
}

/// Reads the port and hands each datagram to its phone's line.
pub(super) struct Router {
    port: Arc<Port>,
    routes: HashMap<IpAddr, UnboundedSender<Delivery>>,
}

impl Router {
    /// Routes until the task is aborted or the socket fails. Datagrams for an address no
    /// line has, or for a line already gone, are dropped.
    pub async fn run(self) {
        let mut octets = vec![0u8; BATCH_SIZE * SLOT];
        let mut meta = [RecvMeta::default(); BATCH_SIZE];
        let port = &*self.port;
        loop {
            if port.socket.readable().await.is_err() {
                return;
            }
            port.parked.store(false, Ordering::Release);
            let mut slots: Vec<IoSliceMut<'_>> =
                octets.chunks_exact_mut(SLOT).map(IoSliceMut::new).collect();
            // Whatever the kernel took in before now, this read (or an earlier one) gets.
            let now = super::wall_clock::wall_time();
            let count = match port.socket.try_io(Interest::READABLE, || {
                port.state
                    .recv((&port.socket).into(), &mut slots, &mut meta)
            }) {
                Ok(count) => count,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    // Nothing to read: the router waits for the socket, and no phone need
                    // wait for the router (a phone's deadline may pass while all is quiet).
                    port.parked.store(true, Ordering::Release);
                    port.mark_emptied(now);
                    continue;
                }
                // A receive error (an ICMP error for an earlier send) names no phone.
                Err(_) => continue,
            };
            drop(slots);
            let emptied = count < meta.len();
            for (slot, meta) in octets.chunks_exact(SLOT).zip(&meta).take(count) {
                let Some(to) = meta.dst_ip else {
                    continue;
                };
                let Some(line) = self.routes.get(&to) else {
                    continue;
                };
                let from = SocketAddr::new(meta.addr.ip().to_canonical(), meta.addr.port());
                // quinn-udp asks the kernel for receive times (Linux).
                let at = meta.timestamp.unwrap_or_else(super::wall_clock::wall_time);
                // Coalesced datagrams (GRO) come `stride` octets apart.
                for datagram in slot[..meta.len].chunks(meta.stride.max(1)) {
                    let _ = line.send((Bytes::copy_from_slice(datagram), from, at));
                }
            }
            if emptied {
                // A short batch: the socket held no more when it was read.
                port.mark_emptied(now);
            }
            // The phones just handed datagrams answer before the next batch is read.
            tokio::task::yield_now().await;
        }
    }
}

/// The socket domain of `family`.
pub(super) fn domain(family: Family) -> Domain {
    match family {
        Family::V4 => Domain::IPV4,
        Family::V6 => Domain::IPV6,
    }
}

/// The unspecified address of `family`: 0.0.0.0 or ::.
pub(super) fn unspecified(family: Family) -> IpAddr {
    match family {
        Family::V4 => Ipv4Addr::UNSPECIFIED.into(),
        Family::V6 => Ipv6Addr::UNSPECIFIED.into(),
    }
}

/// Lets an IPv6 socket bind or send from an address that is local by a route alone (`ip -6
/// route add local PREFIX dev lo`), as Linux lets every IPv4 socket use 127/8: the kernel
/// checks IPv6 sources against the addresses assigned to devices unless it is told not to
/// (`IPV6_FREEBIND`). Elsewhere nothing is needed or done.
pub(super) fn may_send_from_any_address(socket: &socket2::Socket) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    socket.set_freebind_v6(true)?;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = socket;
    Ok(())
}

/// How long [`check_local`] waits for a datagram sent to itself.
const LOCAL_WAIT: Duration = Duration::from_millis(500);

/// Checks that each of `ips` (IPv6 phones' addresses) is an address of this host: a datagram
/// sent from it to itself, on the loopback device, comes back. Without the route that makes
/// the phones' prefix local, the gatekeeper's answers would go nowhere (or, from a gatekeeper
/// elsewhere, off the host): the storm refuses to start instead. The first address that is
/// not local, with what the system said.
pub(super) async fn check_local(ips: &[IpAddr]) -> Result<(), (IpAddr, String)> {
    for &ip in ips {
        let fail = |what: String| (ip, what);
        let socket = crate::sockets::udp(domain(Family::of(ip)))
            .and_then(|socket| {
                #[cfg(any(target_os = "linux", target_os = "android"))]
                socket.bind_device(Some(b"lo"))?;
                if ip.is_ipv6() {
                    socket.set_only_v6(true)?;
                    may_send_from_any_address(&socket)?;
                }
                socket.bind(&SocketAddr::new(ip, 0).into())?;
                UdpSocket::from_std(socket.into())
            })
            .map_err(|error| fail(format!("cannot bind it: {error}")))?;
        let own = socket
            .local_addr()
            .map_err(|error| fail(error.to_string()))?;
        socket
            .send_to(b"rasgk storm: is this address local?", own)
            .await
            .map_err(|error| fail(format!("cannot send from it to itself: {error}")))?;
        let mut buffer = [0u8; 64];
        match tokio::time::timeout(LOCAL_WAIT, socket.recv_from(&mut buffer)).await {
            Ok(Ok((_, from))) if from == own => {}
            Ok(Ok((_, from))) => return Err(fail(format!("{from} answered instead of itself"))),
            Ok(Err(error)) => return Err(fail(error.to_string())),
            Err(_) => {
                return Err(fail(format!(
                    "a datagram it sent to itself did not come back within {LOCAL_WAIT:?}"
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn each_phone_sends_from_its_own_ip_and_hears_only_what_was_sent_to_it() {
        let peer = UdpSocket::bind("127.0.73.1:0").await.unwrap();
        let peer_address = peer.local_addr().unwrap();
        let ips: Vec<Ipv4Addr> = (1..=3).map(|i| Ipv4Addr::new(127, 73, 1, i)).collect();
        let (router, mut lines) = Port::open(Family::V4)
            .unwrap()
            .lines(ips.iter().map(|&ip| IpAddr::V4(ip)));
        let routing = tokio::spawn(router.run());
        let wait = Duration::from_secs(5);
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(line.local_addr().ip(), IpAddr::V4(ips[i]));
            line.send_to(&[i as u8; 3], peer_address).await.unwrap();
            let mut buffer = [0u8; 16];
            let (len, from) = tokio::time::timeout(wait, peer.recv_from(&mut buffer))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(from, line.local_addr(), "the phone's own address");
            assert_eq!(&buffer[..len], &[i as u8; 3]);
        }
        // Answers in reverse order, and one to an address no phone has.
        let stranger = SocketAddr::from((Ipv4Addr::new(127, 73, 1, 9), lines[0].address.port()));
        peer.send_to(b"nobody", stranger).await.unwrap();
        for line in lines.iter().rev() {
            let octet = line.address.ip().to_string().into_bytes();
            peer.send_to(&octet, line.local_addr()).await.unwrap();
        }
        for line in &mut lines {
            let (datagram, from, _) = tokio::time::timeout(wait, line.recv_from())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(from, peer_address);
            assert_eq!(&datagram[..], line.address.ip().to_string().as_bytes());
            assert!(line.inbox.try_recv().is_err(), "one datagram each");
        }
        routing.abort();
    }

    #[tokio::test]
    async fn a_phone_past_its_deadline_hears_what_came_by_then_and_waits_for_nothing_more() {
        let peer = UdpSocket::bind("127.0.73.1:0").await.unwrap();
        let ip = Ipv4Addr::new(127, 73, 2, 1);
        let (router, mut lines) = Port::open(Family::V4).unwrap().lines([IpAddr::V4(ip)]);
        let routing = tokio::spawn(router.run());
        let line = &mut lines[0];
        let wait = Duration::from_secs(5);
        // Quiet: the deadline passed, nothing came, and the router waits for the socket.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let by = super::super::wall_clock::wall_time();
        let heard = tokio::time::timeout(wait, line.recv_by(by)).await;
        assert_eq!(
            heard.map(|d| d.is_none()),
            Ok(true),
            "no wait on a quiet socket"
        );
        // Something sent before the deadline is heard, however late the phone asks.
        peer.send_to(b"answer", line.local_addr()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let by = super::super::wall_clock::wall_time();
        let heard = tokio::time::timeout(wait, line.recv_by(by)).await.unwrap();
        assert_eq!(heard.map(|(d, ..)| d), Some(Bytes::from_static(b"answer")));
        // And after it, nothing more.
        let heard = tokio::time::timeout(wait, line.recv_by(by)).await;
        assert_eq!(heard.map(|d| d.is_none()), Ok(true));
        routing.abort();
    }

    #[tokio::test]
    async fn an_address_of_this_host_is_local() {
        assert_eq!(check_local(&["127.0.73.5".parse().unwrap()]).await, Ok(()));
        // ::1 where the host has IPv6 at all.
        if std::net::UdpSocket::bind("[::1]:0").is_ok() {
            assert_eq!(check_local(&["::1".parse().unwrap()]).await, Ok(()));
        }
    }
}
