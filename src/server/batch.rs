//! RAS datagrams in batches: on Linux one `recvmmsg` reads every datagram waiting on a
//! socket (up to [`SLOTS`]) and one `sendmmsg` sends the replies to all of them, instead of
//! a system call (and, as often as not, a trip through the scheduler on the way back to
//! user space) per datagram. Elsewhere the same functions read and send one datagram per
//! call.
//!
//! Both go through tokio's [`UdpSocket::try_io`], so readiness is tracked as for any other
//! read or write: a batch that would block clears it and the state task waits again.

use std::io;
use std::net::SocketAddr;

use tokio::io::Interest;
use tokio::net::UdpSocket;

use crate::gatekeeper::{Transmit, MAX_DATAGRAM};

/// Datagrams read in one call.
pub const SLOTS: usize = 64;

/// Octets a slot holds: one more than the longest datagram read as RAS, so a longer one
/// arrives long enough for the core to count it as oversized.
const SLOT: usize = MAX_DATAGRAM + 1;

/// Buffers for one batch of received datagrams.
pub struct Received {
    octets: Vec<u8>,
    /// Length and source of each datagram read.
    datagrams: Vec<(usize, SocketAddr)>,
    #[cfg(target_os = "linux")]
    names: Vec<libc::sockaddr_storage>,
}

impl Default for Received {
    fn default() -> Received {
        Received {
            octets: vec![0; SLOTS * SLOT],
            datagrams: Vec::with_capacity(SLOTS),
            #[cfg(target_os = "linux")]
            // SAFETY: sockaddr_storage is plain data; all zeros is a valid (empty) value.
            names: vec![unsafe { std::mem::zeroed() }; SLOTS],
        }
    }
}

impl Received {
    /// The datagrams read by the last [`receive`](Received::receive): octets and source.
    pub fn datagrams(&self) -> impl Iterator<Item = (&[u8], SocketAddr)> + '_ {
        self.datagrams
            .iter()
            .enumerate()
            .map(|(slot, &(len, from))| (&self.octets[slot * SLOT..slot * SLOT + len], from))
    }

    /// Reads the datagrams waiting on `socket`, up to [`SLOTS`]: how many (at least one), or
    /// `WouldBlock` when none is.
    #[cfg(target_os = "linux")]
    pub fn receive(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        self.datagrams.clear();
        let mut iovecs: Vec<libc::iovec> = self
            .octets
            .chunks_exact_mut(SLOT)
            .map(|slot| libc::iovec {
                iov_base: slot.as_mut_ptr().cast(),
                iov_len: SLOT,
            })
            .collect();
        // SAFETY: mmsghdr is plain data; all zeros is a valid value, filled in below.
        let mut headers: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; SLOTS];
        for ((header, iovec), name) in headers.iter_mut().zip(&mut iovecs).zip(&mut self.names) {
            header.msg_hdr.msg_name = (name as *mut libc::sockaddr_storage).cast();
            header.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
            header.msg_hdr.msg_iov = iovec;
            header.msg_hdr.msg_iovlen = 1;
        }
        let count = socket.try_io(Interest::READABLE, || {
            // SAFETY: every header points at a live iovec over its own slot of `octets` and
            // at its own sockaddr_storage, all of which outlive the call.
            let count = unsafe {
                libc::recvmmsg(
                    socket.as_raw_fd(),
                    headers.as_mut_ptr(),
                    SLOTS as u32,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if count < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(count as usize)
            }
        })?;
        for (header, name) in headers.iter().zip(&self.names).take(count) {
            let from = socket_addr(name).unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
            self.datagrams.push((header.msg_len as usize, from));
        }
        Ok(count)
    }

    /// Reads one datagram waiting on `socket`, or `WouldBlock`.
    #[cfg(not(target_os = "linux"))]
    pub fn receive(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        self.datagrams.clear();
        let (len, from) = socket.try_recv_from(&mut self.octets[..SLOT])?;
        self.datagrams.push((len, from));
        Ok(1)
    }
}

/// The address in a `sockaddr_storage` the kernel filled in (IPv4 or IPv6).
#[cfg(target_os = "linux")]
fn socket_addr(name: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(name.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in, which fits in the storage.
            let v4 =
                unsafe { &*(name as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::from((
                v4.sin_addr.s_addr.to_ne_bytes(),
                u16::from_be(v4.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6, which fits in the storage.
            let v6 =
                unsafe { &*(name as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                v6.sin6_addr.s6_addr.into(),
                u16::from_be(v6.sin6_port),
                v6.sin6_flowinfo,
                v6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Sends `transmits` from `socket`, each to its `to` (already in the socket's family): how
/// many went before the socket would block (all of them, usually). An error other than
/// `WouldBlock` is returned with nothing more sent; the caller sends the rest one by one.
#[cfg(target_os = "linux")]
pub fn send(socket: &UdpSocket, transmits: &[Transmit]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let names: Vec<socket2::SockAddr> = transmits
        .iter()
        .map(|t| socket2::SockAddr::from(t.to))
        .collect();
    let mut iovecs: Vec<libc::iovec> = transmits
        .iter()
        .map(|t| libc::iovec {
            iov_base: t.payload.as_ptr() as *mut libc::c_void,
            iov_len: t.payload.len(),
        })
        .collect();
    // SAFETY: mmsghdr is plain data; all zeros is a valid value, filled in below.
    let mut headers: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; transmits.len()];
    for ((header, iovec), name) in headers.iter_mut().zip(&mut iovecs).zip(&names) {
        header.msg_hdr.msg_name = name.as_ptr() as *mut libc::c_void;
        header.msg_hdr.msg_namelen = name.len();
        header.msg_hdr.msg_iov = iovec;
        header.msg_hdr.msg_iovlen = 1;
    }
    let mut sent = 0;
    while sent < headers.len() {
        let result = socket.try_io(Interest::WRITABLE, || {
            // SAFETY: every header points at a live iovec over its payload (read only, as
            // sendmmsg reads it) and at its own address, all of which outlive the call.
            let count = unsafe {
                libc::sendmmsg(
                    socket.as_raw_fd(),
                    headers[sent..].as_mut_ptr(),
                    (headers.len() - sent) as u32,
                    libc::MSG_DONTWAIT,
                )
            };
            if count < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(count as usize)
            }
        });
        match result {
            Ok(0) => break,
            Ok(count) => sent += count,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
            Err(error) if sent == 0 => return Err(error),
            Err(_) => break,
        }
    }
    Ok(sent)
}

/// Sends `transmits` from `socket` one by one; how many went before it would block.
#[cfg(not(target_os = "linux"))]
pub fn send(socket: &UdpSocket, transmits: &[Transmit]) -> io::Result<usize> {
    let mut sent = 0;
    for transmit in transmits {
        match socket.try_send_to(&transmit.payload, transmit.to) {
            Ok(_) => sent += 1,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
            Err(error) if sent == 0 => return Err(error),
            Err(_) => break,
        }
    }
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[tokio::test]
    async fn a_batch_in_is_every_datagram_waiting_and_a_batch_out_reaches_each_peer() {
        let server = UdpSocket::bind("127.0.72.1:0").await.unwrap();
        let local = server.local_addr().unwrap();
        let mut phones = Vec::new();
        for i in 0..5u8 {
            let phone = UdpSocket::bind((std::net::Ipv4Addr::new(127, 0, 72, 10 + i), 0))
                .await
                .unwrap();
            phone.send_to(&[i; 3], local).await.unwrap();
            phones.push(phone);
        }
        let oversized = UdpSocket::bind("127.0.72.20:0").await.unwrap();
        oversized
            .send_to(&vec![9; MAX_DATAGRAM + 100], local)
            .await
            .unwrap();
        let mut received = Received::default();
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while seen.len() < 6 && tokio::time::Instant::now() < deadline {
            server.readable().await.unwrap();
            match received.receive(&server) {
                Ok(_) => seen.extend(received.datagrams().map(|(d, from)| (d.to_vec(), from))),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => panic!("{error}"),
            }
        }
        assert_eq!(seen.len(), 6);
        for (i, phone) in phones.iter().enumerate() {
            let from = phone.local_addr().unwrap();
            let (octets, _) = seen
                .iter()
                .find(|(_, f)| *f == from)
                .expect("each phone read");
            assert_eq!(octets, &vec![i as u8; 3]);
        }
        let (big, _) = seen
            .iter()
            .find(|(_, f)| *f == oversized.local_addr().unwrap())
            .unwrap();
        assert_eq!(
            big.len(),
            MAX_DATAGRAM + 1,
            "long enough to be counted oversized"
        );

        let transmits: Vec<Transmit> = phones
            .iter()
            .enumerate()
            .map(|(i, phone)| Transmit {
                local,
                to: phone.local_addr().unwrap(),
                payload: Bytes::from(vec![100 + i as u8; 1 + i]),
            })
            .collect();
        assert_eq!(send(&server, &transmits).unwrap(), 5);
        for (i, phone) in phones.iter().enumerate() {
            let mut buffer = [0u8; 16];
            let (len, from) = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                phone.recv_from(&mut buffer),
            )
            .await
            .expect("the reply arrives")
            .unwrap();
            assert_eq!(from, local);
            assert_eq!(&buffer[..len], &vec![100 + i as u8; 1 + i][..]);
        }
    }
}
