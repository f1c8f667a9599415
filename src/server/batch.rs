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

/// The room for a source address `recvmmsg` is given in each header.
#[cfg(target_os = "linux")]
const NAME_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;

/// Buffers for batches of datagrams in and out, set up once: the system-call structures
/// point into the buffers beside them, which live on the heap and never grow, so moving a
/// `Batch` moves none of them.
pub struct Batch {
    octets: Vec<u8>,
    /// Length and source of each datagram read.
    datagrams: Vec<(usize, SocketAddr)>,
    #[cfg(target_os = "linux")]
    kernel: Kernel,
}

/// What `recvmmsg` and `sendmmsg` read and write: a header, a buffer descriptor and an
/// address per slot, for each direction.
#[cfg(target_os = "linux")]
struct Kernel {
    in_names: Vec<libc::sockaddr_storage>,
    in_iovecs: Vec<libc::iovec>,
    in_headers: Vec<libc::mmsghdr>,
    out_names: Vec<libc::sockaddr_storage>,
    out_iovecs: Vec<libc::iovec>,
    out_headers: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers in the kernel structures point only into the `Batch`'s own heap
// buffers (and, during a send, into payloads the send borrows); nothing else shares them,
// so the whole may move to another thread like any owned buffer.
#[cfg(target_os = "linux")]
unsafe impl Send for Kernel {}

impl Default for Batch {
    fn default() -> Batch {
        let mut octets = vec![0; SLOTS * SLOT];
        #[cfg(target_os = "linux")]
        let kernel = Kernel::over(&mut octets);
        Batch {
            octets,
            datagrams: Vec::with_capacity(SLOTS),
            #[cfg(target_os = "linux")]
            kernel,
        }
    }
}

#[cfg(target_os = "linux")]
impl Kernel {
    fn over(octets: &mut [u8]) -> Kernel {
        // SAFETY (both): plain C structures; all zeros is a valid value of each.
        let zero_name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let zero_header: libc::mmsghdr = unsafe { std::mem::zeroed() };
        let mut kernel = Kernel {
            in_names: vec![zero_name; SLOTS],
            in_iovecs: octets
                .chunks_exact_mut(SLOT)
                .map(|slot| libc::iovec {
                    iov_base: slot.as_mut_ptr().cast(),
                    iov_len: SLOT,
                })
                .collect(),
            in_headers: vec![zero_header; SLOTS],
            out_names: vec![zero_name; SLOTS],
            out_iovecs: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                };
                SLOTS
            ],
            out_headers: vec![zero_header; SLOTS],
        };
        let Kernel {
            in_names,
            in_iovecs,
            in_headers,
            out_names,
            out_iovecs,
            out_headers,
        } = &mut kernel;
        link(in_headers, in_iovecs, in_names);
        link(out_headers, out_iovecs, out_names);
        for header in in_headers.iter_mut() {
            header.msg_hdr.msg_namelen = NAME_LEN;
        }
        kernel
    }
}

/// Points each header at its own buffer descriptor and address, for either direction.
#[cfg(target_os = "linux")]
fn link(
    headers: &mut [libc::mmsghdr],
    iovecs: &mut [libc::iovec],
    names: &mut [libc::sockaddr_storage],
) {
    for (header, (iovec, name)) in headers.iter_mut().zip(iovecs.iter_mut().zip(names)) {
        header.msg_hdr.msg_name = (name as *mut libc::sockaddr_storage).cast();
        header.msg_hdr.msg_iov = iovec;
        header.msg_hdr.msg_iovlen = 1;
    }
}

impl Batch {
    /// The datagrams read by the last [`receive`](Batch::receive): octets and source.
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
        let kernel = &mut self.kernel;
        // The kernel wrote the last call's address lengths into the headers it filled, and
        // only those: the rest still hold the whole size. (Resetting all 64 wrote 4 KB a
        // call, more than the one or two datagrams a call often reads.)
        for header in &mut kernel.in_headers[..self.datagrams.len()] {
            header.msg_hdr.msg_namelen = NAME_LEN;
        }
        self.datagrams.clear();
        let count = socket.try_io(Interest::READABLE, || {
            // SAFETY: every header points at its own iovec over its own slot of `octets`
            // and at its own sockaddr_storage, all owned by this `Batch` (see `Kernel::over`).
            let count = unsafe {
                libc::recvmmsg(
                    socket.as_raw_fd(),
                    kernel.in_headers.as_mut_ptr(),
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
        for (header, name) in kernel.in_headers.iter().zip(&kernel.in_names).take(count) {
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

    /// Sends `transmits` from `socket`, each to its `to` (already in the socket's family):
    /// how many went before the socket would block (all of them, usually). An error other
    /// than `WouldBlock` is returned with nothing more sent; the caller sends the rest one
    /// by one.
    #[cfg(target_os = "linux")]
    pub fn send(&mut self, socket: &UdpSocket, transmits: &[Transmit]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let kernel = &mut self.kernel;
        let mut sent = 0;
        while sent < transmits.len() {
            let chunk = &transmits[sent..(sent + SLOTS).min(transmits.len())];
            for (i, transmit) in chunk.iter().enumerate() {
                kernel.out_iovecs[i] = libc::iovec {
                    iov_base: transmit.payload.as_ptr() as *mut libc::c_void,
                    iov_len: transmit.payload.len(),
                };
                kernel.out_headers[i].msg_hdr.msg_namelen =
                    write_socket_addr(transmit.to, &mut kernel.out_names[i]);
            }
            let result = socket.try_io(Interest::WRITABLE, || {
                // SAFETY: the first `chunk.len()` headers point at their own iovecs, now
                // over payloads `transmits` borrows for this call (sendmmsg only reads
                // them), and at their own addresses, all alive until it returns.
                let count = unsafe {
                    libc::sendmmsg(
                        socket.as_raw_fd(),
                        kernel.out_headers.as_mut_ptr(),
                        chunk.len() as u32,
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

    /// Sends `transmits` from `socket`: in batches ([`send`](Batch::send)), then what a
    /// batch could not send one by one, waiting for room; a datagram that cannot be sent is
    /// logged and left.
    pub async fn send_all(&mut self, socket: &UdpSocket, transmits: &[Transmit]) {
        let sent = self.send(socket, transmits).unwrap_or(0);
        for transmit in &transmits[sent..] {
            if let Err(error) = socket.send_to(&transmit.payload, transmit.to).await {
                tracing::warn!(to = %transmit.to, %error, "cannot send a RAS reply");
            }
        }
    }

    /// Sends `transmits` from `socket` one by one; how many went before it would block.
    #[cfg(not(target_os = "linux"))]
    pub fn send(&mut self, socket: &UdpSocket, transmits: &[Transmit]) -> io::Result<usize> {
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

/// Writes `address` into `name` as the kernel reads it; its length.
#[cfg(target_os = "linux")]
fn write_socket_addr(address: SocketAddr, name: &mut libc::sockaddr_storage) -> libc::socklen_t {
    let socket2 = socket2::SockAddr::from(address);
    let len = socket2.len();
    // SAFETY: a SockAddr holds a sockaddr_storage-sized buffer of which `len` octets are
    // the address; `name` is a whole sockaddr_storage.
    unsafe {
        std::ptr::copy_nonoverlapping(
            socket2.as_ptr().cast::<u8>(),
            (name as *mut libc::sockaddr_storage).cast::<u8>(),
            len as usize,
        );
    }
    len
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
        let mut batch = Batch::default();
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while seen.len() < 6 && tokio::time::Instant::now() < deadline {
            server.readable().await.unwrap();
            match batch.receive(&server) {
                Ok(_) => seen.extend(batch.datagrams().map(|(d, from)| (d.to_vec(), from))),
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
        assert_eq!(batch.send(&server, &transmits).unwrap(), 5);
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
