//! The bare echo: the ceiling with no runtime in it. One thread of its own, a blocking UDP
//! socket, `recvmmsg` for up to [`BATCH`] datagrams at a time and one `sendmmsg` sending each
//! back to its source — the least any responder on this machine can do per datagram, so
//! what rasgk costs above it is everything rasgk does (runtime, decode, rules, encode).
//!
//! Linux only (the system calls are Linux's); elsewhere it answers one datagram per call.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// Datagrams read (and answered) in one call at most.
pub const BATCH: usize = 64;

/// Octets a datagram may have.
const SLOT: usize = 2048;

/// How long a read waits before the thread looks at its stop flag.
const POLL: Duration = Duration::from_millis(50);

/// A running bare echo; stopped (and its thread joined) by [`BareEcho::stop`].
pub struct BareEcho {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Its thread's id, for its CPU time in `/proc`.
    pub tid: i32,
}

impl BareEcho {
    /// Binds `address` and answers every datagram there on a thread of its own.
    pub fn start(address: SocketAddr) -> Result<BareEcho, String> {
        let socket = Socket::new(
            Domain::for_address(address),
            Type::DGRAM,
            Some(Protocol::UDP),
        )
        .and_then(|socket| {
            socket.set_read_timeout(Some(POLL))?;
            // The same buffers as the gatekeeper's RAS sockets ask for.
            let _ = socket.set_recv_buffer_size(4 << 20);
            let _ = socket.set_send_buffer_size(4 << 20);
            socket.bind(&address.into())?;
            Ok(socket)
        })
        .map_err(|e| format!("cannot bind the bare echo on {address}: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let (started, tid) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("rasgk-bare-echo".into())
            .spawn(move || {
                let _ = started.send(super::cpu_time::this_thread());
                serve(&socket, &stopping);
            })
            .map_err(|e| format!("cannot start the bare echo's thread: {e}"))?;
        let tid = tid
            .recv()
            .map_err(|_| "the bare echo's thread ended as it started".to_string())?;
        Ok(BareEcho {
            stop,
            thread: Some(thread),
            tid,
        })
    }

    /// Stops it and waits for its thread.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for BareEcho {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Echoes until `stop` is set.
#[cfg(target_os = "linux")]
fn serve(socket: &Socket, stop: &AtomicBool) {
    use std::os::fd::AsRawFd;
    let fd = socket.as_raw_fd();
    let mut octets = vec![0u8; BATCH * SLOT];
    // SAFETY: all-zero is a valid value of these plain C structures.
    let mut names: Vec<libc::sockaddr_storage> = vec![unsafe { std::mem::zeroed() }; BATCH];
    let mut iovecs: Vec<libc::iovec> = octets
        .chunks_mut(SLOT)
        .map(|slot| libc::iovec {
            iov_base: slot.as_mut_ptr().cast(),
            iov_len: SLOT,
        })
        .collect();
    // SAFETY: as above.
    let mut headers: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; BATCH];
    while !stop.load(Ordering::Relaxed) {
        for (i, header) in headers.iter_mut().enumerate() {
            iovecs[i].iov_len = SLOT;
            header.msg_hdr.msg_name = std::ptr::addr_of_mut!(names[i]).cast();
            header.msg_hdr.msg_namelen =
                std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            header.msg_hdr.msg_iov = std::ptr::addr_of_mut!(iovecs[i]);
            header.msg_hdr.msg_iovlen = 1;
            header.msg_len = 0;
        }
        // SAFETY: every header points into `names`, `iovecs` and `octets`, which outlive the
        // call and are not otherwise touched during it; BATCH headers are passed.
        let read = unsafe {
            libc::recvmmsg(
                fd,
                headers.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        let Ok(read) = usize::try_from(read) else {
            // A timeout (to look at the stop flag), or an error: try again.
            continue;
        };
        // Each datagram back to where it came from: the same headers, the lengths read.
        for i in 0..read {
            iovecs[i].iov_len = headers[i].msg_len as usize;
        }
        let mut sent = 0;
        while sent < read {
            // SAFETY: as above, for the `read` headers filled by recvmmsg.
            let n = unsafe {
                libc::sendmmsg(
                    fd,
                    headers[sent..].as_mut_ptr(),
                    (read - sent) as libc::c_uint,
                    0,
                )
            };
            match usize::try_from(n) {
                Ok(0) | Err(_) => break,
                Ok(n) => sent += n,
            }
        }
    }
}

/// Echoes until `stop` is set, a datagram per call.
#[cfg(not(target_os = "linux"))]
fn serve(socket: &Socket, stop: &AtomicBool) {
    let socket: std::net::UdpSocket = match socket.try_clone() {
        Ok(socket) => socket.into(),
        Err(_) => return,
    };
    let mut buffer = [0u8; SLOT];
    while !stop.load(Ordering::Relaxed) {
        if let Ok((n, from)) = socket.recv_from(&mut buffer) {
            let _ = socket.send_to(&buffer[..n], from);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_datagram_comes_back_to_its_sender() {
        let address: SocketAddr = "127.0.61.9:17190".parse().unwrap();
        let echo = BareEcho::start(address).expect("binds");
        let phones: Vec<std::net::UdpSocket> = (0..3)
            .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        for (n, phone) in phones.iter().enumerate() {
            phone
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            phone.send_to(&[n as u8; 10], address).unwrap();
        }
        for (n, phone) in phones.iter().enumerate() {
            let mut buffer = [0u8; 64];
            let (len, from) = phone.recv_from(&mut buffer).expect("the echo answers");
            assert_eq!((len, from), (10, address));
            assert!(buffer[..len].iter().all(|&b| b == n as u8));
        }
        echo.stop();
    }
}
